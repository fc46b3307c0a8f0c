"""The daemon's zipapp: only the standard library and the project's own modules,
built deterministically, and runnable by a bare python3 (3.9 or newer)."""

from __future__ import annotations

import ast
import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pytest
from dreamlake.engine.daemon import build as daemon_app

# What a fresh interpreter loads when it imports every module of the daemon package,
# split into project modules and the top-level names of everything else.
_TRACE = r"""
import importlib, json, pkgutil, sys
before = set(sys.modules)
pkg = importlib.import_module(sys.argv[1])
for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
    importlib.import_module(info.name)
new = set(sys.modules) - before
print(json.dumps({
    "project": sorted(m for m in new if m.split(".")[0] == "dreamlake"),
    "other": sorted({m.split(".")[0] for m in new} - set(sys.stdlib_module_names) - {"dreamlake"}),
}))
"""


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("app") / daemon_app.APP_NAME
    path.write_bytes(daemon_app.build())
    return path


def _modules() -> list[str]:
    return [m.name for m in daemon_app.module_closure()]


def test_the_daemon_imports_only_the_standard_library_and_the_project() -> None:
    """The gate: a third-party import anywhere in the daemon's closure (at module
    level or inside a function) fails here, before any host sees it."""
    modules = daemon_app.module_closure()
    assert daemon_app.external_imports(modules) == {}
    names = {m.name for m in modules}
    assert {
        "dreamlake",
        "dreamlake.controlplane.nymph.main",
        "dreamlake.controlplane.nymph.daemon",
        "dreamlake.controlplane.nymph.runner",
        "dreamlake.controlplane.client",
    } <= names
    # nothing of the server, the CLI or the engine's heavy parts
    assert not any(
        n.startswith(("dreamlake.controlplane.server", "dreamlake.cli", "dreamlake.engine.verbs"))
        for n in names
    )


def test_a_fresh_interpreter_loads_nothing_outside_the_closure() -> None:
    """The same verdict from an import trace: what python really loads to import the
    daemon package is standard library plus project modules the zipapp holds."""
    proc = subprocess.run(
        [sys.executable, "-c", _TRACE, daemon_app.DAEMON_PACKAGE],
        capture_output=True,
        text=True,
        check=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    trace = json.loads(proc.stdout)
    assert trace["other"] == []
    assert set(trace["project"]) <= set(_modules())


def test_external_imports_names_a_third_party_import(tmp_path: Path) -> None:
    src = tmp_path / "mod.py"
    src.write_text(
        "from typing import TYPE_CHECKING\nimport json\n"
        "if TYPE_CHECKING:\n    import pydantic\n"
        "def f():\n    import httpx\n"
    )
    mod = daemon_app.Module("dreamlake.fake", src, False)
    assert daemon_app.external_imports([mod]) == {"httpx": ["dreamlake.fake"]}


def test_the_sources_parse_as_python_3_9() -> None:
    for mod in daemon_app.module_closure():
        ast.parse(mod.file.read_text(encoding="utf-8"), str(mod.file), feature_version=(3, 9))
    ast.parse(daemon_app.MAIN, feature_version=(3, 9))


def test_same_sources_same_bytes(tmp_path: Path) -> None:
    """Deterministic across builds, processes and time zones; cached by content hash."""
    one = daemon_app.build()
    assert daemon_app.build() == one
    env = dict(os.environ, TZ="Pacific/Kiritimati", SOURCE_DATE_EPOCH="1")
    other = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from dreamlake.engine.daemon import build as d; "
            "sys.stdout.write(d.sha256(d.build()))",
        ],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=60,
    ).stdout
    assert other == daemon_app.sha256(one)

    built = daemon_app.cached(tmp_path)
    path, digest = built.path, built.sha256
    assert built.fresh and digest == daemon_app.sha256(one) and path.read_bytes() == one
    assert path.name == f"nymph-{digest[:16]}.pyz"
    inode = path.stat().st_ino
    assert daemon_app.cached(tmp_path) == daemon_app.Built(path, digest, False)
    assert path.stat().st_ino == inode  # not rewritten
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temp file left


def test_the_archive_holds_exactly_the_closure(app: Path) -> None:
    data = app.read_bytes()
    assert data.startswith(b"#!/usr/bin/env python3\n")
    with zipfile.ZipFile(app) as zf:
        names = zf.namelist()
        infos = zf.infolist()
    want = sorted([m.arcname for m in daemon_app.module_closure()] + ["__main__.py"])
    assert names == want
    assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}


def test_a_bare_python_runs_it_without_site_packages(app: Path, tmp_path: Path) -> None:
    """-I -S: no site-packages at all, so only the archive and the standard library
    can satisfy an import."""
    run = [sys.executable, "-I", "-S"]
    help_ = subprocess.run(
        [*run, str(app), "--help"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert help_.returncode == 0 and "--provider" in help_.stdout, help_.stderr
    if "--version" in help_.stdout:  # the archive has no package metadata to read it from
        version = subprocess.run(
            [*run, str(app), "--version"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            timeout=60,
        )
        assert version.returncode == 0, version.stderr
    _import_all(run, app, tmp_path)


def _import_all(python: list[str], app: Path, cwd: Path) -> None:
    code = (
        "import importlib, sys; sys.path.insert(0, sys.argv[1]); "
        "[importlib.import_module(m) for m in sys.argv[2:]]"
    )
    proc = subprocess.run(
        [*python, "-c", code, str(app), *_modules()],
        capture_output=True,
        text=True,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr


def _python(minor: int) -> str | None:
    """A working python3.<minor>: on PATH, or under pyenv's versions folder."""
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    candidates = [
        shutil.which(f"python3.{minor}"),
        *sorted(glob.glob(f"{root}/versions/3.{minor}.*/bin/python3.{minor}")),
    ]
    for c in candidates:
        if not c:
            continue
        ok = subprocess.run(
            [c, "-c", f"import sys; assert sys.version_info[:2] == (3, {minor})"],
            capture_output=True,
            stdin=subprocess.DEVNULL,
            check=False,
            timeout=30,
        )
        if ok.returncode == 0:
            return c
    return None


def test_python_3_9_runs_the_daemon(app: Path, tmp_path: Path) -> None:
    py = _python(9)
    if py is None:
        pytest.skip("needs a python3.9 interpreter (on PATH or under pyenv)")
    _import_all([py, "-I", "-S"], app, tmp_path)
    # the daemon itself: no control plane answers, it retries, SIGTERM ends it with 0
    token = tmp_path / "token"
    token.write_text("t")
    with socket.socket() as s:  # a free port: nothing answers there
        s.bind(("127.0.0.1", 0))
        server = f"http://127.0.0.1:{s.getsockname()[1]}"
    argv = ["--server", server, "--token-file", str(token), "--provider", "lab"]
    proc = subprocess.Popen(
        [py, "-I", "-S", str(app), *argv, "--poll-wait", "1", "--max-backoff", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        cwd=tmp_path,
    )
    watchdog = threading.Timer(60, proc.kill)  # never hang the suite on a silent daemon
    watchdog.start()
    try:
        out = b""
        assert proc.stdout is not None
        while b"unreachable" not in out:
            line = proc.stdout.readline()
            assert line, out
            out += line
    finally:
        proc.terminate()
        rc = proc.wait(timeout=15)
        watchdog.cancel()
    assert rc == 0


def test_python_below_3_9_is_told_so(app: Path, tmp_path: Path) -> None:
    py = _python(8)
    if py is None:
        pytest.skip("needs a python3.8 interpreter (on PATH or under pyenv)")
    proc = subprocess.run(
        [py, str(app), "--help"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        timeout=30,
    )
    assert proc.returncode == 2
    assert "nymph: error: needs Python 3.9 or newer" in proc.stderr and "3.8" in proc.stderr
