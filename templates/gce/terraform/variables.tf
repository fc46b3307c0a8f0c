# Decisions: no defaults. Set them in terraform.tfvars (see ../ADAPT.md).

variable "project" {
  description = "Google Cloud project ID that pays for the VM and holds its GPU quota."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project))
    error_message = "The project must be a project ID (not its name or number) such as \"my-gpu-project\"."
  }
}

variable "zone" {
  description = "Zone the VM runs in; it must offer the chosen GPU type."
  type        = string

  validation {
    condition     = can(regex("^[a-z]+-[a-z]+[0-9]+-[a-z]$", var.zone))
    error_message = "The zone must be a zone name such as \"us-central1-a\"."
  }
}

variable "accelerator_type" {
  description = "GPU type attached to the VM."
  type        = string

  validation {
    condition     = contains(["nvidia-tesla-t4", "nvidia-tesla-v100", "nvidia-tesla-p4", "nvidia-tesla-p100", "nvidia-l4", "nvidia-tesla-a100", "nvidia-a100-80gb", "nvidia-h100-80gb"], var.accelerator_type)
    error_message = "The accelerator_type must be one of nvidia-tesla-t4, nvidia-tesla-v100, nvidia-tesla-p4, nvidia-tesla-p100, nvidia-l4, nvidia-tesla-a100, nvidia-a100-80gb, nvidia-h100-80gb."
  }
}

# Settings with sensible defaults.

variable "machine_type" {
  description = "Machine type; n1-* for T4/V100/P4/P100, g2-* for L4, a2-* for A100, a3-* for H100."
  type        = string
  default     = "n1-standard-8"
}

variable "accelerator_count" {
  description = "GPUs per VM."
  type        = number
  default     = 1

  validation {
    condition     = contains([1, 2, 4, 8], var.accelerator_count)
    error_message = "The accelerator_count must be 1, 2, 4 or 8."
  }
}

variable "name" {
  description = "Name of the VM."
  type        = string
  default     = "dreamlake-worker"

  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$", var.name))
    error_message = "The name must be a valid instance name (lowercase letters, digits and dashes)."
  }
}

variable "image" {
  description = "Boot image with the NVIDIA driver installed."
  type        = string
  default     = "projects/deeplearning-platform-release/global/images/family/common-cu124-debian-11-py310"
}

variable "disk_gb" {
  description = "Boot disk size, in GB."
  type        = number
  default     = 100
}

variable "network" {
  description = "VPC network the VM attaches to."
  type        = string
  default     = "default"
}

variable "spot" {
  description = "Run as a Spot VM (cheaper, may be preempted)."
  type        = bool
  default     = false
}

variable "ssh_user" {
  description = "Login user on the VM for `dreamlake provider connect`; null for your local user name."
  type        = string
  default     = null
}

variable "labels" {
  description = "Extra labels on the VM."
  type        = map(string)
  default     = {}
}

# Lifecycle (not a decision): `dreamlake provider suspend|resume` set it.

variable "target_status" {
  description = "Desired lifecycle state: active (running) or suspended (VM stopped, disk kept)."
  type        = string
  default     = "active"
  # Checked by dreamlake (active | suspended) when it reads terraform.tfvars.
}
