"""The ``lakeshore`` CLI against a real server refusing its token: a 401 (no
token, an unknown one) and a 403 (not an admin's) each end with a ``nextAction``
command, and where this machine holds the server's admin token that command,
run as it is, succeeds."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest
from lakeshore_fixtures import ServerProc, clean_env, lakeshore_argv

SHARES_SERVER = True  # reads only, and a namespace it never creates

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def lakeshore(shared_server_sqlite: ServerProc) -> ServerProc:
    return shared_server_sqlite


def _run(argv: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*lakeshore_argv(), *argv],
        capture_output=True,
        text=True,
        env=clean_env(**env),
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def _refused(argv: list[str], status: int, **env: str) -> str:
    """Run ``argv`` expecting ``status``; its nextAction command, also said in prose."""
    out = _run(argv, **env)
    assert out.returncode == 1, out
    doc = json.loads(out.stdout)
    assert doc["error"].startswith(str(status)), doc
    action = doc["nextAction"]
    assert action is not None and action["kind"] == "run", doc
    assert f"next: {action['command']}" in out.stderr
    return str(action["command"])


def _again(command: str, **env: str) -> subprocess.CompletedProcess[str]:
    words = shlex.split(command)
    assert words[0] == "lakeshore"
    return _run(words[1:], **env)


def test_no_token_names_the_admin_token_here(lakeshore: ServerProc, tmp_path: Path) -> None:
    # off the server's machine (an empty data dir): a file to make, with what goes in it
    argv = ["namespaces", "list", "--server", lakeshore.url, "--json"]
    step = _refused(argv, 401, LAKESHORE_DATA_DIR=str(tmp_path))
    command, _, comment = step.partition("   # ")
    assert command == shlex.join(["lakeshore", *argv, "--token-file", "token"])
    assert "lakeshore tokens create --namespace default" in comment
    # an unknown token with the server's data dir here: its admin token, which works
    env = {"LAKESHORE_DATA_DIR": str(lakeshore.data_dir), "LAKESHORE_TOKEN": "not-a-token"}
    step = _refused(argv, 401, **env)
    admin = str(lakeshore.data_dir / "admin.token")
    assert step == shlex.join(["lakeshore", *argv, "--token-file", admin])
    assert _again(step, **env).returncode == 0


def test_a_given_token_file_is_replaced(lakeshore: ServerProc, tmp_path: Path) -> None:
    bad = tmp_path / "bad.token"
    bad.write_text("not-a-token\n")
    argv = ["namespaces", "list", "--token-file", str(bad), "--server", lakeshore.url, "--json"]
    env = {"LAKESHORE_DATA_DIR": str(lakeshore.data_dir)}
    step = _refused(argv, 401, **env)
    admin = str(lakeshore.data_dir / "admin.token")
    assert step == shlex.join(["lakeshore", "namespaces", "list", "--token-file", admin,
                               "--server", lakeshore.url, "--json"])  # fmt: skip
    assert _again(step, **env).returncode == 0


def test_an_admin_route_with_a_namespace_token(lakeshore: ServerProc, tmp_path: Path) -> None:
    token = lakeshore.admin.create_token("default", label="not an admin")
    argv = ["tokens", "list", "--server", lakeshore.url, "--json"]
    step = _refused(argv, 403, LAKESHORE_TOKEN=token, LAKESHORE_DATA_DIR=str(tmp_path))
    command, _, comment = step.partition("   # ")
    assert command == shlex.join(["lakeshore", *argv, "--token-file", "admin.token"])
    assert "<data dir>/admin.token" in comment
    env = {"LAKESHORE_TOKEN": token, "LAKESHORE_DATA_DIR": str(lakeshore.data_dir)}
    step = _refused(argv, 403, **env)
    assert step == shlex.join(
        ["lakeshore", *argv, "--token-file", str(lakeshore.data_dir / "admin.token")]
    )
    assert _again(step, **env).returncode == 0
