terraform {
  required_version = ">= 1.2.0" # lifecycle preconditions

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.80, < 7.0"
    }
  }
}

provider "aws" {
  region = var.region

  # Set through TF_VAR_* by the engine to run against a local AWS API
  # implementation or private endpoints. Credentials come from the environment.
  skip_credentials_validation = var.aws_skip_credentials_validation
  skip_requesting_account_id  = var.aws_skip_credentials_validation
  skip_metadata_api_check     = var.aws_skip_credentials_validation

  dynamic "endpoints" {
    for_each = length(var.aws_endpoints) > 0 ? [var.aws_endpoints] : []
    content {
      ec2 = lookup(endpoints.value, "ec2", null)
      eks = lookup(endpoints.value, "eks", null)
      iam = lookup(endpoints.value, "iam", null)
      sts = lookup(endpoints.value, "sts", null)
    }
  }

  default_tags {
    tags = merge(var.tags, {
      "dreamlake"          = "true"
      "dreamlake-provider" = var.cluster_name
    })
  }
}
