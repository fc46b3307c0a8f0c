output "worker_host" {
  description = "The host the daemon runs on."
  value       = "localhost"
}

output "worker_name" {
  description = "The name the daemon claims the provider under."
  value       = local.worker_name
}

output "workdir" {
  description = "Where the daemon keeps its work."
  value       = local.workdir
}

output "queues" {
  description = "Queues the daemon pulls work from."
  value       = local.queues
}

output "daemon_args" {
  description = "The daemon's command line; it reads LAKESHORE_URL and LAKESHORE_TOKEN from the environment."
  value       = local.daemon_args
}
