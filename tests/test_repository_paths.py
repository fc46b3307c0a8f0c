"""No tracked file carries a path of the machine it was made on: this checkout, the
interpreter's or a virtualenv's folder, a folder under the user's home that a tool
keeps (caches, pyenv, ~/.local), or a temporary folder a run made (``mkdtemp`` and
pytest names). Illustrations in docs and test data (``/tmp/proj``, ``/home/you``)
are not such paths and pass."""

from __future__ import annotations

import getpass
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# folders under a home that tools fill with this machine's own files
HOME_TOOL_DIRS = (".pyenv", ".cache", ".local", ".venv", ".virtualenvs", ".config", ".pulumi")
BOUNDARY = r"(?<![\w.~-])"  # the path starts here, not inside a longer one


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "nobody"


def machine_paths() -> re.Pattern[str]:
    home = str(Path.home())
    tmp = tempfile.gettempdir()
    prefixes = {str(REPO), sys.prefix, sys.base_prefix, sys.exec_prefix}
    parts = [BOUNDARY + re.escape(p) + r"(?=[/\"'\s)]|$)" for p in sorted(prefixes) if p != "/"]
    if home not in ("/", ""):
        tools = "|".join(re.escape(d) for d in HOME_TOOL_DIRS)
        parts.append(BOUNDARY + re.escape(home) + rf"/(?:{tools})/")
    for base in {tmp, "/tmp", "/var/tmp"}:
        t = re.escape(base)
        # pytest's basetemp, tempfile.mkdtemp / mkstemp names (a prefix, then 8 of
        # [a-z0-9_] with a digit or an underscore among them)
        parts.append(BOUNDARY + t + rf"/pytest-of-{re.escape(_user())}\b")
        parts.append(BOUNDARY + t + r"/(?:[\w.]*[-_.])?tmp[a-z0-9_]{8}\b")
        parts.append(BOUNDARY + t + r"/(?:[\w.]+[-_])+(?=[a-z0-9_]{0,7}[0-9_])[a-z0-9_]{8}(?![\w-])")
    return re.compile("|".join(parts))


def tracked_files() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True, timeout=60
    ).stdout.decode()
    return [REPO / name for name in out.split("\0") if name]


def test_the_pattern_finds_what_a_run_records() -> None:
    found = machine_paths()
    home = str(Path.home())
    for text in (
        f'"python": "{sys.prefix}/bin/python"',
        f"{REPO}/.venv/bin/lakeshore serve",
        f'"dataDir": "{tempfile.gettempdir()}/lakeshore-daemons-35bxy85t/s0"',
        f"{tempfile.gettempdir()}/pytest-of-{_user()}/pytest-12/test_x0",
        f"{tempfile.gettempdir()}/tmpab3_k9zq/out.json",
    ):
        assert found.search(text), text
    if home != "/":
        assert found.search(f"File {home}/.pyenv/versions/3.11.7/lib/x.py")
    for text in (
        'dream_dir="/tmp/proj"',
        'workdir = "/tmp/nymph-bench"',
        "`/home/you/.local/share/nymph`",
        "/api/namespaces/{ns}/work/{id}",
        f"{REPO}-other/file",
    ):
        assert not found.search(text), text


def test_no_tracked_file_holds_a_path_of_this_machine() -> None:
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    found = machine_paths()
    hits = []
    for path in tracked_files():
        try:
            text = path.read_bytes()[:2_000_000].decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue  # gone from the working tree, or not text
        for n, line in enumerate(text.splitlines(), 1):
            m = found.search(line)
            if m:
                hits.append(f"{path.relative_to(REPO)}:{n}: {m.group(0)}")
    assert not hits, "\n".join(hits[:50])
