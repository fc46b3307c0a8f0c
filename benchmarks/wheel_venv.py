"""The project as users install it, for the benchmarks that time it that way: a wheel
built from a source tree (this working tree, or a `git archive` of a revision),
installed into a throwaway venv, its bytecode compiled, with the console script pip
writes. Not the editable install this checkout's venv has, whose import finder
(setuptools' ``__editable___*_finder``, importing ``pathlib``, ``re``, ``fnmatch``
and ``urllib.parse`` at start-up) costs every run and no user pays.

Offline: the wheel is built without build isolation (this venv's setuptools) and
installed without an index and without dependencies; the venv reaches the
dependencies already installed in this venv through a ``.pth`` line placed after
the project's own files (a path line only: that folder's own ``.pth`` files, the
editable finder's among them, are not run). Nothing is downloaded.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def source_copy(repo: Path, into: Path) -> Path:
    """The files of ``repo``'s working tree as a fresh clone plus the uncommitted
    changes would hold them (tracked and untracked files, not the ignored ones:
    no ``build/``, no ``*.egg-info``, no bytecode), copied into ``into``. The wheel
    is built there, so a build writes nothing into the tree itself (setuptools
    builds in ``build/`` beside the sources), nor races another build of it."""
    listed = subprocess.run(
        ["git", "-C", str(repo), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        check=True,
        capture_output=True,
    ).stdout
    for name in filter(None, listed.decode().split("\0")):
        src = repo / name
        if not src.is_file():  # a tracked file removed from the working tree
            continue
        dst = into / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
    return into


def build_wheel(src: Path, into: Path) -> Path:
    """The wheel of the project at ``src`` (its own ``pyproject.toml`` and
    ``setup.py``), built with this venv's setuptools, in ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "--no-index", "-w", str(into), str(src)],
        check=True, capture_output=True,
    )  # fmt: skip
    return next(into.glob("dreamlake-*.whl"))


def console_script(venv: Path, name: str, target: str) -> Path:
    """``venv/bin/<name>`` as pip writes a console script for ``module:function``."""
    module, function = target.split(":")
    script = venv / "bin" / name
    script.write_text(
        f"#!{venv / 'bin' / 'python'}\nimport sys\nfrom {module} import {function}\n"
        f"sys.exit({function}())\n"
    )
    script.chmod(0o755)
    return script


def wheel_venv(where: Path, src: Path = REPO) -> Path:
    """A throwaway venv under ``where`` holding the project at ``src`` installed
    from its wheel (``src`` the working tree: from a copy of it), compiled,
    reaching the dependencies in this venv. Returns its ``dreamlake`` script."""
    where.mkdir(parents=True, exist_ok=True)
    if src.resolve() == REPO:
        src = source_copy(REPO, where / "src")
    wheel = build_wheel(src, where / "wheels")
    venv = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--no-compile",
         "--target", str(site), str(wheel)],
        check=True, capture_output=True,
    )  # fmt: skip
    python = str(venv / "bin" / "python")
    # compiled by the venv's own interpreter, where the files are (``--target``
    # installs into a temporary folder first: bytecode compiled there names it)
    subprocess.run([python, "-m", "compileall", "-q", str(site / "dreamlake")], check=True)
    deps = next(p for p in sys.path if p.endswith("site-packages"))
    (site / "zz-deps.pth").write_text(deps + "\n")  # after the project's own files
    return console_script(venv, "dreamlake", "dreamlake.cli.entry:main")
