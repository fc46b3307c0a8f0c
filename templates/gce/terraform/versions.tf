terraform {
  required_version = ">= 1.0.0"

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 5.0, < 7.0"
    }
  }
}

# Credentials come from the environment (GOOGLE_APPLICATION_CREDENTIALS or
# `gcloud auth application-default login`), never from a file here.
provider "google" {
  project = var.project
  zone    = var.zone
}
