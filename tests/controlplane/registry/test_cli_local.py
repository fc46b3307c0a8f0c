"""``providers test --dreamrc``: the offline check on a local .dreamrc, no server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from registry_harness import LAKESHORE


def test_local_check(tmp_path: Path) -> None:
    rc = tmp_path / ".dreamrc"
    rc.write_text(
        "providers:\n  lab: !providers.SSH {host: h, port: '22', key: {$secret: k}}\n  c: !providers.SLURM {host: login}\n"
    )

    def run(*a):
        return subprocess.run(
            [LAKESHORE, "providers", "test", *a, "--dreamrc", str(rc)],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=60,
        )

    out = run("lab", "--json")
    assert out.returncode == 1
    report = json.loads(out.stdout)
    checks = {c["check"]: c for c in report["checks"]}
    assert checks["required:host"]["ok"] and not checks["type:port"]["ok"]
    assert not checks["secret:key"]["ok"] and "inline" in checks["secret:key"]["detail"]
    assert any("did not open an SSH session" in n for n in report["notChecked"])
    slurm = run("c")
    assert slurm.returncode == 0 and "stub" not in slurm.stdout and "sbatch" in slurm.stdout
    missing = run("nope")
    assert missing.returncode == 1 and "known: c, lab" in missing.stderr
