"""Fixtures for the launch tests live in ``launch_harness`` (importable by name)."""

from launch_harness import app_client, aws_api  # noqa: F401
