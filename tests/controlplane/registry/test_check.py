"""``providers test``'s offline checks (pure: no server, no network)."""

from __future__ import annotations

import pytest
from dreamlake.controlplane.registry.check import check_provider


def _ok(_secret: str) -> None:
    return None


@pytest.mark.parametrize("launcher", ["SSH", "SLURM"])
def test_a_port_out_of_range_fails_for_every_launcher_with_a_port(launcher: str) -> None:
    report = check_provider("lab", launcher, {"host": "h", "port": 70000}, _ok)
    assert not report.ok
    assert [c.name for c in report.checks if not c.ok] == ["range:port"]
    assert check_provider("lab", launcher, {"host": "h", "port": 22}, _ok).ok


def test_missing_kwarg_wrong_type_and_a_secret_that_does_not_resolve() -> None:
    report = check_provider(
        "cloud",
        "EC2",
        {"key_name": 3, "aws_credentials": {"$secret": "aws"}},
        lambda name: f"secret {name!r} does not exist",
    )
    failed = {c.name: c.detail for c in report.checks if not c.ok}
    assert set(failed) == {"required:region", "type:key_name", "secret:aws_credentials"}
    assert "--kwarg region=" in failed["required:region"]
    assert report.stub is None and report.not_checked


def test_slurm_launches_server_side_now() -> None:
    report = check_provider("hpc", "SLURM", {"host": "login"}, _ok)
    assert report.ok and report.stub is None
    assert not any("no server-side launch route" in n for n in report.not_checked)
    assert any("did not contact the login node" in n for n in report.not_checked)
