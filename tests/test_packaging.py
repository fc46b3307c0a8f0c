"""A non-editable install works from any directory, templates included."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from wheelbuild import build_wheel

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wheel_installs_and_runs_from_elsewhere(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path / "wheels")
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


def _extras() -> tuple[list[str], dict[str, list[str]]]:
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return project["dependencies"], project["optional-dependencies"]


def _names(reqs: list[str]) -> set[str]:
    import re

    return {re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0].lower() for r in reqs}


def test_the_base_install_carries_only_what_the_cli_runs() -> None:
    """The Pulumi SDK is the `pulumi` extra, the control plane's client is the
    standard library's: neither is in the base install."""
    base, extras = _extras()
    assert not _names(base) & {"pulumi", "httpx", "fastapi", "sqlalchemy", "psycopg"}
    assert _names(extras["pulumi"]) == {"pulumi"}
    assert "dreamlake[pulumi]" in extras["pulumi-clouds"]
    assert "pulumi" in extras["all"][0] and "dreamlake[pulumi]" in extras["dev"]


def test_the_server_extra_does_not_cap_what_the_base_resolved() -> None:
    _, extras = _extras()
    (crypto,) = [r for r in extras["server"] if r.startswith("cryptography")]
    assert "<" not in crypto


def test_postgres_is_psycopg_3_and_plain_urls_mean_it() -> None:
    from dreamlake.controlplane.db import normalize_url

    _, extras = _extras()
    assert _names(extras["postgres"]) == {"psycopg"}
    for url in ("postgresql://u@h/db", "postgres://u@h/db"):
        assert normalize_url(url) == "postgresql+psycopg://u@h/db"
    assert normalize_url("postgresql+psycopg://u@h/db") == "postgresql+psycopg://u@h/db"


def test_readme_reports_every_install() -> None:
    """README's table has a row per user's install and names every extra in `[all]`;
    the base install stays within 35 packages."""
    import re

    text = (REPO / "README.md").read_text()
    rows = dict(
        re.findall(r"^\| `(dreamlake(?:\[[a-z-]+\])?)` \| .* \| ([0-9]+) \| [^|]+ \|$", text, re.M)
    )
    assert {"dreamlake", "dreamlake[pulumi]", "dreamlake[server]", "dreamlake[all]"} <= set(rows)
    assert int(rows["dreamlake"]) <= 35
    _, extras = _extras()
    all_row = next(line for line in text.splitlines() if line.startswith("| `dreamlake[all]`"))
    for extra in set(extras) - {"all", "dev"}:
        assert f"`{extra}`" in all_row, extra
