resource "aws_eks_cluster" "this" {
  name     = var.cluster_name
  version  = var.kubernetes_version
  role_arn = aws_iam_role.cluster.arn

  vpc_config {
    subnet_ids              = local.subnet_ids
    endpoint_public_access  = true
    endpoint_private_access = true
  }

  depends_on = [aws_iam_role_policy_attachment.cluster]
}

resource "aws_eks_node_group" "gpu" {
  cluster_name    = aws_eks_cluster.this.name
  node_group_name = "${var.cluster_name}-gpu"
  node_role_arn   = aws_iam_role.node.arn
  subnet_ids      = local.subnet_ids

  ami_type       = var.node_ami_type
  capacity_type  = var.capacity_type
  instance_types = var.gpu_instance_types
  disk_size      = var.node_disk_gb

  scaling_config {
    min_size     = var.node_min
    desired_size = var.node_desired
    max_size     = var.node_max
  }

  labels = {
    "dreamlake/gpu" = "true"
  }

  taint {
    key    = "nvidia.com/gpu"
    value  = "true"
    effect = "NO_SCHEDULE"
  }

  lifecycle {
    ignore_changes = [scaling_config[0].desired_size]

    # The same rule as the Pulumi stack's config model (stacks/kube): EKS refuses it
    # only at apply time, after the cluster has been paid for.
    precondition {
      condition     = var.node_min <= var.node_desired && var.node_desired <= var.node_max
      error_message = "node_min <= node_desired <= node_max must hold."
    }
  }

  depends_on = [aws_iam_role_policy_attachment.node]
}
