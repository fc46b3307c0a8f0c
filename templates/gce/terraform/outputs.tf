output "worker_host" {
  description = "The VM's public IP (its internal IP when it has none)."
  value       = try(google_compute_instance.worker.network_interface[0].access_config[0].nat_ip, google_compute_instance.worker.network_interface[0].network_ip)
}

output "worker_user" {
  description = "The login user on the VM (null: your local user name)."
  value       = var.ssh_user
}

output "internal_ip" {
  description = "The VM's internal IP."
  value       = google_compute_instance.worker.network_interface[0].network_ip
}

output "instance_name" {
  description = "The VM's name."
  value       = google_compute_instance.worker.name
}

output "instance_id" {
  description = "The VM's ID."
  value       = google_compute_instance.worker.instance_id
}

output "zone" {
  description = "The zone the VM runs in."
  value       = var.zone
}
