# Decisions: no defaults. Set them in terraform.tfvars (see ../ADAPT.md).

variable "region" {
  description = "AWS region every resource is created in."
  type        = string

  validation {
    condition     = can(regex("^[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-[0-9]+$", var.region))
    error_message = "The region must be an AWS region name such as \"us-east-1\"."
  }
}

variable "subnet_id" {
  description = "Subnet the workers launch into; its VPC holds the security group."
  type        = string

  validation {
    condition     = can(regex("^subnet-[0-9a-f]{8,17}$", var.subnet_id))
    error_message = "The subnet_id must be a subnet ID such as \"subnet-0123456789abcdef0\"."
  }
}

variable "instance_type" {
  description = "GPU instance type of each worker."
  type        = string

  validation {
    condition     = can(regex("^(g4dn|g4ad|g5|g5g|g6|g6e|gr6|p3|p3dn|p4d|p4de|p5|p5e|p5en)\\.[0-9a-z]+$", var.instance_type))
    error_message = "The instance_type must be a GPU instance type such as \"g5.xlarge\" (families g4dn, g4ad, g5, g5g, g6, g6e, gr6, p3, p3dn, p4d, p4de, p5, p5e, p5en)."
  }
}

variable "ami_id" {
  description = "GPU-ready machine image (NVIDIA driver installed), published in the chosen region."
  type        = string

  validation {
    condition     = can(regex("^ami-[0-9a-f]{8,17}$", var.ami_id))
    error_message = "The ami_id must be an AMI ID such as \"ami-0123456789abcdef0\"."
  }
}

# Settings with sensible defaults.

variable "worker_count" {
  description = "How many worker instances to run."
  type        = number
  default     = 1

  validation {
    condition     = var.worker_count >= 1 && var.worker_count <= 20 && floor(var.worker_count) == var.worker_count
    error_message = "The worker_count must be a whole number from 1 to 20."
  }
}

variable "name_prefix" {
  description = "Prefix of every resource name and the dreamlake-provider tag."
  type        = string
  default     = "dreamlake"

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9-]{0,31}$", var.name_prefix))
    error_message = "The name_prefix must match ^[a-z0-9][a-z0-9-]{0,31}$."
  }
}

variable "root_volume_gb" {
  description = "Size of each worker's root volume, in GiB."
  type        = number
  default     = 100

  validation {
    condition     = var.root_volume_gb >= 30 && var.root_volume_gb <= 16384
    error_message = "The root_volume_gb must be between 30 and 16384."
  }
}

variable "associate_public_ip" {
  description = "Give each worker a public IP (needed for outbound traffic in a subnet without NAT)."
  type        = bool
  default     = true
}

variable "ssh_user" {
  description = "Login user of the AMI, used by `dreamlake provider connect` (ubuntu for Ubuntu AMIs, ec2-user for Amazon Linux)."
  type        = string
  default     = "ubuntu"
}

variable "key_name" {
  description = "Name of an existing EC2 key pair for ssh access, or null for none."
  type        = string
  default     = null
}

variable "ssh_ingress_cidrs" {
  description = "CIDR blocks allowed to reach port 22. Empty: no inbound ssh (the daemon dials out)."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for c in var.ssh_ingress_cidrs : can(cidrhost(c, 0))])
    error_message = "Each entry of ssh_ingress_cidrs must be a CIDR block such as \"203.0.113.0/24\"."
  }
}

variable "tags" {
  description = "Extra tags on every resource."
  type        = map(string)
  default     = {}
}

# Endpoint settings, set by the engine through TF_VAR_* (not decisions).

variable "aws_endpoints" {
  description = "Custom AWS API endpoints by service name (ec2, iam, sts), e.g. a local AWS API implementation."
  type        = map(string)
  default     = {}
}

variable "aws_skip_credentials_validation" {
  description = "Skip the credential, account-ID and metadata-API checks (for local AWS API implementations)."
  type        = bool
  default     = false
}

# Lifecycle (not a decision): `dreamlake provider suspend|resume` set it.

variable "target_status" {
  description = "Desired lifecycle state: active (running) or suspended (instances stopped, volumes kept)."
  type        = string
  default     = "active"
  # Checked by dreamlake (active | suspended) when it reads terraform.tfvars.
}
