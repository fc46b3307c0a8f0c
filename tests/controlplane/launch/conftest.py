"""Fixtures for the launch tests live in ``launch_harness`` (importable by name); the
SLURM cluster (``slurm_cluster``) is in ``tests/controlplane/conftest.py``, shared with
the capacity tests."""

from launch_harness import app_client, aws_api  # noqa: F401
