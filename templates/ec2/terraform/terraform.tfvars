# Decisions for the ec2 provider. Read ../ADAPT.md before choosing values.
# Uncomment each key and give it a value from YOUR account, then re-run
# `dreamlake provider create -n NAME --continue`.

# AWS region every resource is created in.
# region = "us-east-1"

# Subnet the workers launch into (its VPC holds the security group).
# subnet_id = "subnet-0123456789abcdef0"

# GPU instance type of each worker.
# instance_type = "g5.xlarge"

# GPU-ready image (NVIDIA driver installed) in the chosen region (the decision ami).
# ami_id = "ami-0123456789abcdef0"

# Optional settings (defaults in variables.tf):
# worker_count      = 1
# key_name          = "ops"
# ssh_user          = "ubuntu"
# ssh_ingress_cidrs = ["203.0.113.0/24"]
