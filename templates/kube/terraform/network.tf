# The VPC: created here from a CIDR, or adopted by id ("vpc-…"). An adopted VPC keeps
# its own gateway, routes and subnets; the cluster and nodes go into its subnets.

data "aws_availability_zones" "available" {
  state = "available"
}

locals {
  adopt_vpc  = can(regex("^vpc-", var.vpc))
  azs        = slice(data.aws_availability_zones.available.names, 0, var.az_count)
  vpc_id     = local.adopt_vpc ? data.aws_vpc.adopted[0].id : aws_vpc.this[0].id
  subnet_ids = local.adopt_vpc ? data.aws_subnets.adopted[0].ids : aws_subnet.public[*].id
}

data "aws_vpc" "adopted" {
  count = local.adopt_vpc ? 1 : 0
  id    = var.vpc
}

data "aws_subnets" "adopted" {
  count = local.adopt_vpc ? 1 : 0

  filter {
    name   = "vpc-id"
    values = [var.vpc]
  }
}

resource "aws_vpc" "this" {
  count = local.adopt_vpc ? 0 : 1

  cidr_block           = var.vpc
  enable_dns_support   = true
  enable_dns_hostnames = true

  tags = {
    Name = "${var.cluster_name}-vpc"
  }
}

resource "aws_internet_gateway" "this" {
  count = local.adopt_vpc ? 0 : 1

  vpc_id = aws_vpc.this[0].id

  tags = {
    Name = "${var.cluster_name}-igw"
  }
}

resource "aws_subnet" "public" {
  count = local.adopt_vpc ? 0 : var.az_count

  vpc_id                  = aws_vpc.this[0].id
  cidr_block              = cidrsubnet(var.vpc, 4, count.index)
  availability_zone       = local.azs[count.index]
  map_public_ip_on_launch = true

  tags = {
    Name                                        = "${var.cluster_name}-public-${local.azs[count.index]}"
    "kubernetes.io/role/elb"                    = "1"
    "kubernetes.io/cluster/${var.cluster_name}" = "shared"
  }
}

resource "aws_route_table" "public" {
  count = local.adopt_vpc ? 0 : 1

  vpc_id = aws_vpc.this[0].id

  route {
    cidr_block = "0.0.0.0/0"
    gateway_id = aws_internet_gateway.this[0].id
  }

  tags = {
    Name = "${var.cluster_name}-public"
  }
}

resource "aws_route_table_association" "public" {
  count = local.adopt_vpc ? 0 : var.az_count

  subnet_id      = aws_subnet.public[count.index].id
  route_table_id = aws_route_table.public[0].id
}
