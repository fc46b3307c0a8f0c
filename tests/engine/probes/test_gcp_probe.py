"""The ``gcp-gpu-zones`` probe and ``degraded: no-credentials``.

The GCE API cannot be reached here, so the zone listing runs against a TEST DOUBLE of
the ``gcloud`` CLI (a shell script on PATH printing what ``gcloud compute
accelerator-types list --format=value(zone.basename())`` prints). Credential
detection and the no-credentials path use no double at all."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from dreamlake.engine.probes import run_probes
from dreamlake.engine.world.paths import ProviderPaths

GCLOUD_DOUBLE = """#!/bin/sh
# test double of gcloud: records its argv, prints accelerator zones
echo "$@" > "$(dirname "$0")/argv"
case "$*" in
  *--project=broken*) echo "ERROR: (gcloud) permission denied" >&2; exit 1 ;;
esac
printf 'us-central1-a\\neurope-west4-b\\nus-central1-a\\n'
"""


def _gce(tmp_path: Path, tfvars: str = "") -> ProviderPaths:
    d = tmp_path / ".dream" / "providers" / "g"
    (d / "terraform").mkdir(parents=True)
    (d / "provider.json").write_text(
        '{"name": "g", "vendor": "gce", "backend": "terraform", "templateVersion": 1, '
        '"engineVersion": "0.1.0"}'
    )
    (d / "terraform" / "terraform.tfvars").write_text(tfvars)
    return ProviderPaths(d)


@pytest.fixture
def gcloud_double(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    g = bin_dir / "gcloud"
    g.write_text(GCLOUD_DOUBLE)
    g.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    config = tmp_path / "gcloud-config"
    config.mkdir()
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(config))
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.delenv("CLOUDSDK_AUTH_ACCESS_TOKEN_FILE", raising=False)
    return config


def test_no_gcloud_login_is_no_credentials(gcloud_double: Path, tmp_path: Path) -> None:
    paths = _gce(tmp_path, 'project = "my-proj"\n')
    assert run_probes({"gcp-gpu-zones"}, paths) == ({}, ["no-credentials", "no-probe"])
    assert not (gcloud_double.parent / "bin" / "argv").exists()  # nothing was asked


def test_zones_of_the_decided_project(gcloud_double: Path, tmp_path: Path) -> None:
    (gcloud_double / "credentials.db").write_bytes(b"")
    paths = _gce(tmp_path, 'project = "my-proj"\n')
    observed, degraded = run_probes({"gcp-gpu-zones"}, paths)
    assert observed == {"gcp-gpu-zones": ["europe-west4-b", "us-central1-a"]}
    assert degraded == []
    argv = (tmp_path / "bin" / "argv").read_text()
    assert "accelerator-types list" in argv and "--project=my-proj" in argv


def test_not_asked_before_the_project_is_decided(gcloud_double: Path, tmp_path: Path) -> None:
    (gcloud_double / "credentials.db").write_bytes(b"")
    assert run_probes({"gcp-gpu-zones"}, _gce(tmp_path)) == ({}, [])


def test_a_failing_gcloud_is_no_probe_only(gcloud_double: Path, tmp_path: Path) -> None:
    (gcloud_double / "credentials.db").write_bytes(b"")
    paths = _gce(tmp_path, 'project = "broken"\n')
    assert run_probes({"gcp-gpu-zones"}, paths) == ({}, ["no-probe"])


def test_no_gcp_credentials_for_projects_is_no_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "none"))
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    paths = _gce(tmp_path)
    assert run_probes({"gcp-projects"}, paths) == ({}, ["no-credentials", "no-probe"])
