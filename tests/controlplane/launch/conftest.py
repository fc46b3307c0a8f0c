"""Fixtures for the launch tests live in ``launch_harness`` (importable by name)."""

from collections.abc import Iterator

import pytest
from launch_harness import app_client, aws_api  # noqa: F401


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """One real single-node SLURM cluster (and its login node's sshd) per session."""
    from slurm_cluster import slurm_skip_reason, start_cluster

    why = slurm_skip_reason()
    if why:
        pytest.skip(why)
    cluster = start_cluster(tmp_path_factory.mktemp("slurm"))
    try:
        yield cluster
    finally:
        cluster.stop()
