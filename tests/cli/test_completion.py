"""Shell completion completes option values, run as the shell runs it: the real
commands with the completion environment click reads."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


def _complete(prog: str, words: str, cwd: Path, **env: str) -> list[str]:
    line = words.split(" ")
    p = subprocess.run(
        [str(BIN / prog)],
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("LAKESHORE")},
            "HOME": str(cwd),
            f"_{prog.upper()}_COMPLETE": "complete_bash",
            "COMP_WORDS": words,
            "COMP_CWORD": str(len(line) - 1),
            **env,
        },
    )
    assert p.returncode == 0, p.stderr
    return p.stdout.split()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    subprocess.run(
        [str(BIN / "dreamlake"), "provider", "create", "-n", "lab1", "--provider", "local",
         "--json"],
        cwd=tmp_path, capture_output=True, stdin=subprocess.DEVNULL, timeout=120,
        env={**os.environ, "HOME": str(tmp_path), "LAKESHORE_URL": "http://127.0.0.1:9"},
    )  # fmt: skip
    (tmp_path / ".dreamrc").write_text(
        "providers:\n  gpubox: !providers.SSH\n    host: h\nmodes:\n  train:\n    provider: gpubox\n"
    )
    return tmp_path


def test_enums_complete(project: Path) -> None:
    assert _complete("dreamlake", "dreamlake provider create --backend ", project) == [
        "pulumi",
        "terraform",
    ]
    assert _complete("dreamlake", "dreamlake provider create --provider e", project) == ["ec2"]
    vendors = _complete("dreamlake", "dreamlake provider create --provider ", project)
    assert {"ec2", "gce", "kube", "local", "ssh"} <= set(vendors)


def test_provider_names_complete_from_the_root_and_the_dreamrc(project: Path) -> None:
    want = ["gpubox", "lab1", "train"]
    assert _complete("dreamlake", "dreamlake provider status -n ", project) == want
    assert _complete("dreamlake", "dreamlake provider plan ", project) == want
    assert _complete("dreamlake", "dreamlake provider plan l", project) == ["lab1"]


def test_namespaces_complete(project: Path) -> None:
    got = _complete(
        "lakeshore", "lakeshore providers list --namespace ", project, LAKESHORE_NAMESPACE="team-a"
    )
    assert got == ["default", "team-a"]


@pytest.mark.parametrize("prog", ["dreamlake", "lakeshore"])
@pytest.mark.parametrize(
    ("shell", "marker"),
    [("zsh", "#compdef"), ("bash", "complete -o"), ("fish", "complete --command")],
)
def test_show_completion_takes_the_shell_by_name(
    prog: str, shell: str, marker: str, tmp_path: Path
) -> None:
    p = subprocess.run(
        [str(BIN / prog), "--show-completion", shell],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert marker in p.stdout and f"_{prog.upper()}_COMPLETE" in p.stdout
