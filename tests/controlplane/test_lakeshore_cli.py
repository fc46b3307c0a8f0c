"""The ``lakeshore`` command: ``serve`` with no data flags keeps its SQLite file and
admin token under the user data dir (and the engine finds them), a bad ``--db``
fails clearly, and ``claims`` / ``work submit --wait`` drive a real nymph."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from dreamlake.engine.world.lakeshore import fetch_claims, resolve_control_plane
from lakeshore_fixtures import (
    NymphProc,
    ServerProc,
    clean_env,
    free_port,
    lakeshore_argv,
    wait_until,
)

SHARES_SERVER = True  # its tests keep to names of their own: the session's server

pytestmark = pytest.mark.slow


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*lakeshore_argv(), *args],
        capture_output=True,
        text=True,
        env=env or clean_env(),
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def test_serve_defaults_to_the_user_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    xdg = tmp_path / "xdg"
    port = free_port()
    env = clean_env(XDG_DATA_HOME=str(xdg), HOME=str(tmp_path))
    log = open(tmp_path / "serve.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [*lakeshore_argv(), "serve", "--port", str(port)],
        stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
    )  # fmt: skip
    log.close()
    try:
        data = xdg / "lakeshore"
        assert wait_until(lambda: (data / "admin.token").is_file(), 180), (
            tmp_path / "serve.log"
        ).read_text()
        assert (data / "lakeshore.db").is_file()
        assert (data / "admin.token").stat().st_mode & 0o777 == 0o600
        # the engine's embedded default finds that token on a loopback url
        monkeypatch.delenv("LAKESHORE_DATA_DIR", raising=False)
        monkeypatch.delenv("DREAMRC", raising=False)
        monkeypatch.setenv("XDG_DATA_HOME", str(xdg))
        monkeypatch.setenv("HOME", str(tmp_path))
        monkeypatch.setenv("LAKESHORE_URL", f"http://127.0.0.1:{port}")
        cp = resolve_control_plane(tmp_path)
        assert cp.token == (data / "admin.token").read_text().strip()
        assert wait_until(lambda: fetch_claims(cp, "anything") is not None, 90)
        assert "listening on http://127.0.0.1:" in (tmp_path / "serve.log").read_text()
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def test_serve_with_a_bad_database_url_fails_clearly(tmp_path: Path) -> None:
    out = run_cli("serve", "--port", str(free_port()), "--data-dir", str(tmp_path),
                  "--db", "nosuchdb://x/y")  # fmt: skip
    assert out.returncode == 1
    assert "cannot start" in out.stderr and "next:" in out.stderr


def test_serve_failing_on_a_database_never_prints_its_password(tmp_path: Path) -> None:
    url = f"postgresql://lake:pw-do-not-print@127.0.0.1:{free_port()}/lake"
    out = run_cli("serve", "--port", str(free_port()), "--data-dir", str(tmp_path), "--db", url)
    assert out.returncode == 1
    assert "cannot start" in out.stderr and "127.0.0.1" in out.stderr
    assert "pw-do-not-print" not in out.stderr + out.stdout


def test_admin_commands_without_a_server(tmp_path: Path) -> None:
    out = run_cli("namespaces", "list", "--server", f"http://127.0.0.1:{free_port()}",
                  "--data-dir", str(tmp_path))  # fmt: skip
    assert out.returncode == 1
    assert "unreachable" in out.stderr and "lakeshore serve" in out.stderr


def test_claims_and_work_commands(
    server: ServerProc, start_nymph: Callable[..., NymphProc]
) -> None:
    common = ["--server", server.url, "--data-dir", str(server.data_dir)]
    out = run_cli("claims", "cli-lab", *common)
    assert out.returncode == 0 and out.stdout.startswith("0 live, 0 gone")
    n = start_nymph(server.url, server.admin_token, provider="cli-lab", instance_id="box-1")
    assert wait_until(lambda: server.admin.claims("cli-lab")["live"] == 1, 90), n.log()
    out = run_cli("claims", "cli-lab", "--json", *common)
    assert json.loads(out.stdout)["instances"][0]["instanceId"] == "box-1"
    out = run_cli("claims", "cli-lab", *common)
    assert "box-1" in out.stdout and "queues: gpu, cpu" in out.stdout

    ok = run_cli("work", "submit", "cli-lab", "echo hello", "--wait", "60", *common)
    assert ok.returncode == 0, ok.stderr + n.log()
    assert "succeeded" in ok.stdout and "hello" in ok.stdout
    bad = run_cli("work", "submit", "cli-lab", "exit 4", "--wait", "60", "--json", *common)
    assert bad.returncode == 1
    assert json.loads(bad.stdout)["exitCode"] == 4
    shown = run_cli("work", "show", json.loads(bad.stdout)["id"], *common)
    assert shown.returncode == 0 and "exit 4" in shown.stdout
    assert n.terminate() == 0


def test_the_local_admin_token_goes_only_to_the_local_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--server`` naming another host must not carry this machine's admin token
    (read from the data dir) there; ``--data-dir`` says explicitly whose it is."""
    from dreamlake.cli.lakeshore.app import make_client
    from dreamlake.cli.lakeshore.registry import _client

    for var in ("LAKESHORE_URL", "LAKESHORE_TOKEN", "LAKESHORE_TOKEN_FILE", "DREAMRC"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LAKESHORE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "admin.token").write_text("lks_local-admin\n")
    remote = "http://10.0.0.9:7878"  # never contacted: only the clients are built

    assert make_client("http://127.0.0.1:7878").token == "lks_local-admin"
    assert make_client(remote).token is None
    assert make_client(remote, data_dir=tmp_path).token == "lks_local-admin"
    assert _client(None, None, None, None).token == "lks_local-admin"
    assert _client(remote, None, None, None).token is None
    assert _client(remote, None, None, None).url == remote
