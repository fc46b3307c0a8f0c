# Decisions for the gce provider. Read ../ADAPT.md before choosing values.
# Uncomment each key and give it a value from YOUR project, then re-run
# `dreamlake provider create -n NAME --continue`.

# Project ID that pays for the VM and holds its GPU quota.
# project = "my-gpu-project"

# Zone that offers the chosen GPU type.
# zone = "us-central1-a"

# GPU type attached to the VM.
# accelerator_type = "nvidia-tesla-t4"

# Optional settings (defaults in variables.tf):
# machine_type = "n1-standard-8"
# spot         = false
