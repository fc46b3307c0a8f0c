output "worker_host" {
  description = "The host the first worker's daemon can be reached on (public IP, else private IP)."
  value       = try(coalesce(aws_instance.worker[0].public_ip, aws_instance.worker[0].private_ip), "")
}

output "worker_user" {
  description = "The login user on the workers."
  value       = var.ssh_user
}

output "worker_hosts" {
  description = "Every worker's host (public IP, else private IP)."
  value       = [for i in aws_instance.worker : i.public_ip != "" ? i.public_ip : i.private_ip]
}

output "instance_ids" {
  description = "The worker instance IDs."
  value       = aws_instance.worker[*].id
}

output "security_group_id" {
  description = "The workers' security group."
  value       = aws_security_group.worker.id
}

output "vpc_id" {
  description = "The VPC of the chosen subnet."
  value       = data.aws_subnet.selected.vpc_id
}

output "region" {
  description = "The region the workers run in."
  value       = var.region
}
