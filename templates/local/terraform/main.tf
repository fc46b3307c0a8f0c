# The local provider: this machine runs the daemon itself.
#
# Nothing here needs a provider plugin, so init, plan and apply work offline.
# The resolved decisions become outputs; `worker_host` is where the daemon runs.

terraform {
  required_version = ">= 1.0.0"
}

locals {
  worker_name = var.worker_name
  workdir     = trimsuffix(var.workdir, "/")
  queues      = distinct(var.queues)
  daemon_args = concat(
    ["nymph", "--name", local.worker_name, "--workdir", local.workdir],
    flatten([for q in local.queues : ["--queue", q]]),
  )
}
