# Decisions: no defaults. Set them in terraform.tfvars (see ../ADAPT.md).

variable "region" {
  description = "AWS region every resource is created in."
  type        = string

  validation {
    condition     = can(regex("^[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-[0-9]+$", var.region))
    error_message = "The region must be an AWS region name such as \"us-east-1\"."
  }
}

variable "cluster_name" {
  description = "Name of the EKS cluster (unique per account and region)."
  type        = string

  validation {
    condition     = can(regex("^[a-zA-Z][a-zA-Z0-9-]{0,99}$", var.cluster_name))
    error_message = "The cluster_name must start with a letter and hold only letters, digits and dashes (at most 100 characters)."
  }
}

variable "vpc" {
  description = "The CIDR of a new VPC (must not overlap networks you peer or VPN with), or the id of an existing VPC to adopt (its subnets in two zones or more)."
  type        = string

  validation {
    condition     = can(regex("^vpc-[0-9a-f]{8}([0-9a-f]{9})?$", var.vpc)) || (can(cidrhost(var.vpc, 0)) && can(regex("/(1[6-9]|20)$", var.vpc)))
    error_message = "The vpc must be a CIDR block from /16 to /20 for a new VPC, such as \"10.42.0.0/16\", or an existing VPC's id to adopt, such as \"vpc-0abc1234\"."
  }
}

variable "gpu_instance_types" {
  description = "Interchangeable GPU instance types for the node group."
  type        = list(string)

  validation {
    condition     = length(var.gpu_instance_types) > 0 && alltrue([for t in var.gpu_instance_types : can(regex("^(g4dn|g5|g6|g6e|gr6|p3|p3dn|p4d|p4de|p5|p5e|p5en)\\.[0-9a-z]+$", t))])
    error_message = "List at least one GPU instance type such as \"g5.xlarge\" (families g4dn, g5, g6, g6e, gr6, p3, p3dn, p4d, p4de, p5, p5e, p5en)."
  }
}

# Settings with sensible defaults.

variable "kubernetes_version" {
  description = "EKS Kubernetes version."
  type        = string
  default     = "1.33"

  validation {
    condition     = can(regex("^1\\.[0-9]+$", var.kubernetes_version))
    error_message = "The kubernetes_version must look like \"1.31\"."
  }
}

variable "node_ami_type" {
  description = "EKS-optimized AMI type of the GPU nodes (NVIDIA driver and container toolkit included)."
  type        = string
  default     = "AL2023_x86_64_NVIDIA"

  validation {
    condition     = contains(["AL2023_x86_64_NVIDIA", "AL2023_ARM_64_NVIDIA", "BOTTLEROCKET_x86_64_NVIDIA", "BOTTLEROCKET_ARM_64_NVIDIA", "AL2_x86_64_GPU"], var.node_ami_type)
    error_message = "The node_ami_type must be a GPU AMI type: AL2023_x86_64_NVIDIA, AL2023_ARM_64_NVIDIA, BOTTLEROCKET_x86_64_NVIDIA, BOTTLEROCKET_ARM_64_NVIDIA or AL2_x86_64_GPU."
  }
}

variable "capacity_type" {
  description = "ON_DEMAND or SPOT for the GPU node group."
  type        = string
  default     = "SPOT"

  validation {
    condition     = contains(["ON_DEMAND", "SPOT"], var.capacity_type)
    error_message = "The capacity_type must be ON_DEMAND or SPOT."
  }
}

variable "node_min" {
  description = "Minimum GPU nodes."
  type        = number
  default     = 0

  validation {
    condition     = var.node_min >= 0 && floor(var.node_min) == var.node_min
    error_message = "The node_min must be a whole number of nodes, 0 or more."
  }
}

variable "node_desired" {
  description = "Desired GPU nodes at creation (the autoscaler owns it afterwards); node_min <= node_desired <= node_max."
  type        = number
  default     = 1

  validation {
    condition     = var.node_desired >= 0 && floor(var.node_desired) == var.node_desired
    error_message = "The node_desired must be a whole number of nodes, 0 or more."
  }
}

variable "node_max" {
  description = "Maximum GPU nodes."
  type        = number
  default     = 4

  validation {
    condition     = var.node_max >= 1 && var.node_max <= 100 && floor(var.node_max) == var.node_max
    error_message = "The node_max must be a whole number between 1 and 100."
  }
}

variable "node_disk_gb" {
  description = "Disk size of each GPU node, in GiB."
  type        = number
  default     = 100
}

variable "az_count" {
  description = "How many availability zones the VPC spans."
  type        = number
  default     = 2

  validation {
    condition     = var.az_count >= 2 && var.az_count <= 4
    error_message = "The az_count must be between 2 and 4 (EKS needs two zones)."
  }
}

variable "tags" {
  description = "Extra tags on every resource."
  type        = map(string)
  default     = {}
}

# Endpoint settings, set by the engine through TF_VAR_* (not decisions).

variable "aws_endpoints" {
  description = "Custom AWS API endpoints by service name (ec2, eks, iam, sts)."
  type        = map(string)
  default     = {}
}

variable "aws_skip_credentials_validation" {
  description = "Skip the credential, account-ID and metadata-API checks (for local AWS API implementations)."
  type        = bool
  default     = false
}

# Lifecycle (not a decision): `dreamlake provider suspend|resume` set it. A cluster has
# no stopped state (see ../ADAPT.md): it is declared so the value in terraform.tfvars
# is one Terraform knows, and nothing reads it.

variable "target_status" {
  description = "Desired lifecycle state: active or suspended (for kube, suspend destroys the cluster)."
  type        = string
  default     = "active"
  # Checked by dreamlake (active | suspended) when it reads terraform.tfvars.
}
