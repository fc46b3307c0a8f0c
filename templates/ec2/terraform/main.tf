data "aws_subnet" "selected" {
  id = var.subnet_id
}

resource "aws_security_group" "worker" {
  name        = "${var.name_prefix}-worker"
  description = "dreamlake GPU workers: all outbound, ssh inbound only from ssh_ingress_cidrs"
  vpc_id      = data.aws_subnet.selected.vpc_id

  egress {
    description = "Outbound to the control plane, registries and data"
    from_port   = 0
    to_port     = 0
    protocol    = "-1"
    cidr_blocks = ["0.0.0.0/0"]
  }

  dynamic "ingress" {
    for_each = length(var.ssh_ingress_cidrs) > 0 ? [var.ssh_ingress_cidrs] : []
    content {
      description = "ssh"
      from_port   = 22
      to_port     = 22
      protocol    = "tcp"
      cidr_blocks = ingress.value
    }
  }
}

resource "aws_instance" "worker" {
  count = var.worker_count

  ami                         = var.ami_id
  instance_type               = var.instance_type
  subnet_id                   = var.subnet_id
  vpc_security_group_ids      = [aws_security_group.worker.id]
  associate_public_ip_address = var.associate_public_ip
  key_name                    = var.key_name

  root_block_device {
    volume_size = var.root_volume_gb
    volume_type = "gp3"
  }

  metadata_options {
    http_tokens = "required"
  }

  tags = {
    Name = "${var.name_prefix}-worker-${count.index}"
  }
}

# The stateful lifecycle: suspended stops the instances (their volumes stay) and
# active starts them again; destroying and re-creating is never how this pauses.
resource "aws_ec2_instance_state" "worker" {
  count = var.worker_count

  instance_id = aws_instance.worker[count.index].id
  state       = var.target_status == "suspended" ? "stopped" : "running"
}
