# Decisions for the kube (EKS) provider. Read ../ADAPT.md before choosing values.
# Uncomment each key and give it a value from YOUR account, then re-run
# `dreamlake provider create -n NAME --continue`.

# AWS region every resource is created in.
# region = "us-east-1"

# EKS cluster name, unique per account and region.
# cluster_name = "gpu-cluster"

# A new VPC's CIDR (must not overlap networks you peer or VPN with),
# or an existing VPC's id to adopt, e.g. "vpc-0abc1234".
# vpc = "10.42.0.0/16"

# Interchangeable GPU instance types for the node group (the decision node_type).
# gpu_instance_types = ["g5.xlarge", "g5.2xlarge"]

# Optional settings (defaults in variables.tf):
# kubernetes_version = "1.33"
# capacity_type      = "SPOT"
# node_max           = 4
