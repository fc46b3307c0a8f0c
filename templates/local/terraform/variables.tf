variable "workdir" {
  description = "Absolute path where the daemon keeps its work (checkouts, logs, scratch)."
  type        = string

  validation {
    condition     = can(regex("^/", var.workdir)) && length(var.workdir) > 1
    error_message = "The workdir must be an absolute path other than /, e.g. \"/var/lib/nymph\"."
  }
}

variable "queues" {
  description = "Queues the daemon pulls work from."
  type        = list(string)

  validation {
    condition     = length(var.queues) > 0 && alltrue([for q in var.queues : can(regex("^[a-z0-9][a-z0-9-]*$", q))])
    error_message = "List at least one queue; queue names match ^[a-z0-9][a-z0-9-]*$ (lowercase letters, digits and dashes)."
  }
}

variable "worker_name" {
  description = "The name this worker claims the provider under in the control plane."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9-]{0,62}$", var.worker_name))
    error_message = "The worker_name must match ^[a-z0-9][a-z0-9-]{0,62}$ (lowercase letters, digits and dashes, at most 63 characters)."
  }
}

# Lifecycle (not a decision): `dreamlake provider suspend|resume` set it.

variable "target_status" {
  description = "Desired lifecycle state: active (running) or suspended (daemon stopped, work directory kept)."
  type        = string
  default     = "active"
  # Checked by dreamlake (active | suspended) when it reads terraform.tfvars.
}
