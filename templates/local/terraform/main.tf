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
  # The provider is the folder above this one (.dream/providers/<name>/terraform).
  provider = basename(dirname(abspath(path.root)))
  daemon_args = [
    "nymph", "--provider", local.provider, "--instance-id", local.worker_name,
    "--workdir", local.workdir, "--queues", join(",", local.queues),
  ]
}
