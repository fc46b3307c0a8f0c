output "worker_host" {
  description = "The host of the cluster's API endpoint, where the daemon's pods are scheduled from."
  value       = trimprefix(aws_eks_cluster.this.endpoint, "https://")
}

output "cluster_name" {
  description = "The EKS cluster name (aws eks update-kubeconfig --name ...)."
  value       = aws_eks_cluster.this.name
}

output "cluster_endpoint" {
  description = "The Kubernetes API endpoint."
  value       = aws_eks_cluster.this.endpoint
}

output "cluster_ca_data" {
  description = "Base64 certificate authority data of the cluster."
  value       = aws_eks_cluster.this.certificate_authority[0].data
}

output "node_group" {
  description = "The GPU node group name."
  value       = aws_eks_node_group.gpu.node_group_name
}

output "vpc_id" {
  description = "The VPC the cluster runs in (created here, or adopted)."
  value       = local.vpc_id
}

output "region" {
  description = "The region the cluster runs in."
  value       = var.region
}
