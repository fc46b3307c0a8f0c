"""A non-editable install works from any directory, templates included."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wheel_installs_and_runs_from_elsewhere(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(wheels),
            str(REPO),
        ],
        check=True,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )
    (wheel,) = wheels.glob("dreamlake-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for vendor in ("kube", "ec2", "gce", "local", "ssh"):
        assert f"dreamlake/templates/{vendor}/TEMPLATE.json" in names
    assert "dreamlake/templates/local/terraform/variables.tf" in names
    assert "dreamlake/templates/local/terraform/terraform.tfvars" in names
    assert not any(n.startswith(("engine/", "cli/", "tests/")) for n in names)
    # PEP 561: programs that embed the engine get its types.
    for pkg in ("dreamlake", "dreamlake/engine", "dreamlake/cli", "dreamlake/controlplane"):
        assert f"{pkg}/py.typed" in names

    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code = (
        "import dreamlake, json;"
        "from dreamlake.engine import create;"
        "r = create('lab', 'local', dream_dir='.');"
        "print(dreamlake.__file__); print(r.status)"
    )
    p = subprocess.run(
        [sys.executable, "-c", code],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        env={
            "PYTHONPATH": str(target),
            "PATH": "/usr/bin:/bin",
            "LAKESHORE_URL": "http://127.0.0.1:9",
        },
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    where, status = p.stdout.split()
    assert where.startswith(str(target))
    assert status == "needs_input"
    assert (elsewhere / ".dream/providers/lab/terraform/variables.tf").is_file()

    # the daemon's zipapp builds from the installed package too, and runs bare
    build = (
        "import sys; from dreamlake.engine.daemon import build as d;"
        "mods = d.module_closure();"
        "bad = [str(m.file) for m in mods if not str(m.file).startswith(sys.argv[1])];"
        "assert not bad, bad;"
        "open('nymph.pyz', 'wb').write(d.build(mods))"
    )
    for argv in (
        [sys.executable, "-c", build, str(target)],
        [sys.executable, "-I", "-S", "nymph.pyz", "--help"],
    ):
        p = subprocess.run(
            argv,
            cwd=elsewhere,
            capture_output=True,
            text=True,
            env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
            stdin=subprocess.DEVNULL,
            timeout=120,
        )
        assert p.returncode == 0, p.stderr
