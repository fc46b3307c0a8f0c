"""``observed`` and ``degraded`` in the results of ``create`` and ``status`` for the
ec2 vendor, with the probes asking moto's server on 127.0.0.1 (no terraform)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.status import status

AMI = "ami-760aaa0f"


def _place(url: str) -> None:
    import boto3

    for region in ("us-east-1", "eu-west-1"):
        boto3.client("ec2", region_name=region, endpoint_url=url).run_instances(
            ImageId=AMI, MinCount=1, MaxCount=1
        )


def test_observed_regions_with_credentials(
    aws_env: None, moto_url: str, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DREAMLAKE_AWS_ENDPOINT_URL", moto_url)
    _place(moto_url)
    res = create("gpu", "ec2", cwd=project)
    assert res.status == "needs_input"
    region = next(b for b in res.blocking or [] if b.key == "region")
    assert region.observed is not None
    assert {"eu-west-1", "us-east-1"} <= set(region.observed)
    assert "no-probe" not in (res.degraded or [])
    assert "observed" in json.dumps(res.to_wire())

    # provider.json settings take over from the environment for later runs.
    pj = project / ".dream" / "providers" / "gpu" / "provider.json"
    record = json.loads(pj.read_text())
    record["settings"] = {"aws": {"endpoints": {"ec2": moto_url}, "probeRegions": ["eu-west-1"]}}
    pj.write_text(json.dumps(record))
    monkeypatch.delenv("DREAMLAKE_AWS_ENDPOINT_URL")
    res = status("gpu", cwd=project)
    region = next(b for b in res.blocking or [] if b.key == "region")
    assert region.observed == ["eu-west-1"]


def test_no_credentials_no_observed(
    project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    res = create("gpu", "ec2", cwd=project)
    assert res.status == "needs_input"
    assert all(b.observed is None for b in res.blocking or [])
    assert "no-probe" in (res.degraded or [])
    assert "no-credentials" in (res.degraded or [])  # and why: distinct from a failed probe
    wire = res.to_wire()
    assert all("observed" not in b for b in wire["blocking"])
