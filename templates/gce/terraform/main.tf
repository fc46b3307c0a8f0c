resource "google_compute_instance" "worker" {
  name = var.name
  # The stateful lifecycle: suspended stops the VM (its disk stays), active starts it.
  desired_status = var.target_status == "suspended" ? "TERMINATED" : "RUNNING"
  machine_type   = var.machine_type
  zone           = var.zone

  labels = merge(var.labels, {
    dreamlake          = "true"
    dreamlake-provider = var.name
  })

  boot_disk {
    initialize_params {
      image = var.image
      size  = var.disk_gb
      type  = "pd-balanced"
    }
  }

  guest_accelerator {
    type  = var.accelerator_type
    count = var.accelerator_count
  }

  scheduling {
    on_host_maintenance = "TERMINATE"
    automatic_restart   = !var.spot
    preemptible         = var.spot
    provisioning_model  = var.spot ? "SPOT" : "STANDARD"
  }

  network_interface {
    network = var.network

    # An ephemeral public IP: outbound traffic and ssh for `connect`.
    access_config {}
  }

  metadata = {
    install-nvidia-driver = "True"
  }
}
