"""A real ``nymph`` subprocess against a real lakeshore: it claims the provider, runs
submitted work through its process runner, deregisters on SIGTERM, goes ``gone``
after kill -9, survives a server that is down or restarted, and refuses bad flags."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from dreamlake.controlplane.client import Client
from lakeshore_fixtures import (
    LIVE_SECONDS,
    NymphProc,
    ServerProc,
    clean_env,
    free_port,
    nymph_argv,
    wait_until,
)

pytestmark = pytest.mark.slow


def claims(c: Client, provider: str) -> tuple[int, int]:
    out = c.claims(provider)
    return out["live"], out["gone"]


def test_claim_run_work_and_sigterm(
    server: ServerProc,
    fresh_namespace: tuple[str, Client],
    start_nymph: Callable[..., NymphProc],
) -> None:
    ns, c = fresh_namespace
    assert c.token is not None
    n = start_nymph(server.url, c.token, provider="lab", namespace=ns, instance_id="host-a")
    assert wait_until(lambda: claims(c, "lab") == (1, 0), 30), n.log()
    inst = c.claims("lab")["instances"][0]
    assert inst["instanceId"] == "host-a" and inst["queues"] == ["gpu", "cpu"]

    item = c.submit_work("lab", "echo to-stdout; echo to-stderr >&2; exit 7", queue="gpu")
    done = c.get_work(item["id"], wait=30)
    assert done["state"] == "failed", n.log()
    assert done["exitCode"] == 7
    assert "to-stdout" in done["outputTail"] and "to-stderr" in done["outputTail"]
    ok = c.get_work(c.submit_work("lab", "printf ok-$DREAMLAKE_PROVIDER")["id"], wait=30)
    assert ok["state"] == "succeeded" and ok["exitCode"] == 0 and ok["outputTail"] == "ok-lab"

    assert n.terminate() == 0, n.log()
    assert claims(c, "lab") == (0, 1)
    assert "deregistered" in n.log()


def test_sigterm_mid_command_kills_it_reports_and_exits_0(
    server: ServerProc,
    fresh_namespace: tuple[str, Client],
    start_nymph: Callable[..., NymphProc],
    tmp_path: Path,
) -> None:
    ns, c = fresh_namespace
    assert c.token is not None
    n = start_nymph(server.url, c.token, provider="busy", namespace=ns)
    assert wait_until(lambda: claims(c, "busy") == (1, 0), 30), n.log()
    started_file, marker = tmp_path / "started", tmp_path / "survived"
    item = c.submit_work("busy", f"touch {started_file}; sleep 30; touch {marker}")
    # "running" on the server means handed over; the file means the command runs
    assert wait_until(started_file.exists, 30), n.log()
    started = time.monotonic()
    assert n.terminate() == 0, n.log()
    assert time.monotonic() - started < 10
    done = c.get_work(item["id"])
    assert done["state"] == "failed", n.log()
    assert done["error"] == "the daemon stopped before the command finished"
    assert claims(c, "busy") == (0, 1)
    time.sleep(0.5)
    assert not marker.exists()


def test_work_handed_over_while_stopping_is_not_started(
    fresh_namespace: tuple[str, Client], tmp_path: Path
) -> None:
    """A long-poll that returns an item just as the daemon stops: the command must
    not start (not even to be killed a moment later); the item is reported failed."""
    from dreamlake.controlplane.nymph.daemon import NOT_STARTED, Daemon, DaemonConfig

    _ns, c = fresh_namespace
    daemon = Daemon(c, DaemonConfig("late", ["cpu"], "i-late", "h", "0"))
    wid = daemon.ensure_registered()
    marker = tmp_path / "started"
    item = c.submit_work("late", f"touch {marker}")
    handed = c.poll_work(wid, wait=1)
    assert handed is not None and handed["id"] == item["id"]
    daemon.stop.set()
    daemon.execute(wid, handed)
    time.sleep(0.3)
    assert not marker.exists()
    done = c.get_work(item["id"])
    assert done["state"] == "failed" and done["error"] == NOT_STARTED


def test_kill_9_goes_gone_after_the_bound(
    server: ServerProc,
    fresh_namespace: tuple[str, Client],
    start_nymph: Callable[..., NymphProc],
) -> None:
    ns, c = fresh_namespace
    assert c.token is not None
    n = start_nymph(server.url, c.token, provider="doomed", namespace=ns)
    assert wait_until(lambda: claims(c, "doomed") == (1, 0), 30), n.log()
    n.kill9()
    killed = time.monotonic()
    assert wait_until(lambda: claims(c, "doomed") == (0, 1), LIVE_SECONDS + 5)
    assert time.monotonic() - killed >= LIVE_SECONDS - 1.0  # not before the bound


def test_register_again_when_the_server_forgot_the_worker(
    server: ServerProc,
    fresh_namespace: tuple[str, Client],
    start_nymph: Callable[..., NymphProc],
) -> None:
    ns, c = fresh_namespace
    assert c.token is not None
    n = start_nymph(server.url, c.token, provider="amnesia", namespace=ns)
    assert wait_until(lambda: claims(c, "amnesia")[0] == 1, 30), n.log()
    wid = c.workers("amnesia")[0]["workerId"]
    c.deregister(wid)  # the server no longer knows the worker id
    assert wait_until(lambda: claims(c, "amnesia")[0] == 1, 15), n.log()
    assert "registering again" in n.log()
    n.terminate()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--provider", "Bad_Name"], "is not a name"),
        (["--provider", "ok", "--token-file", "/nonexistent/token"], "no token"),
        (["--provider", "ok", "--server", ""], "--server"),
    ],
)
def test_bad_flags_exit_2(args: list[str], message: str) -> None:
    base = ["--server", f"http://127.0.0.1:{free_port()}", "--token-file", "/nonexistent/token"]
    out = subprocess.run(
        [*nymph_argv(), *base, *args],
        capture_output=True,
        text=True,
        env=clean_env(),
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert out.returncode == 2
    assert message in out.stderr


def test_reconnects_when_the_server_comes_back(
    server: ServerProc, start_nymph: Callable[..., NymphProc]
) -> None:
    """The module's server is stopped under the daemon and started again (same port,
    same data) twice, rather than servers of the test's own; it ends running."""
    token = server.admin_token
    server.stop()
    # The daemon starts while the server is down: it keeps retrying, never exits.
    n = start_nymph(server.url, token, provider="phoenix")
    time.sleep(2.0)
    assert n.alive(), n.log()
    server.start()
    c = server.admin
    assert wait_until(lambda: claims(c, "phoenix")[0] == 1, 30), n.log()
    # Restarted under a running daemon: it reconnects and is live again.
    server.stop()
    time.sleep(1.0)
    server.start()
    c = server.admin
    assert wait_until(lambda: claims(c, "phoenix")[0] == 1, 30), n.log()
    done = c.get_work(c.submit_work("phoenix", "exit 0")["id"], wait=30)
    assert done["state"] == "succeeded", n.log()
    assert n.alive()
    assert n.terminate() == 0
