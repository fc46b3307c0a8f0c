"""``lakeshore serve`` and ``nymph`` log through ``logging``: text by default, JSON
lines on request, and the server's access log only when it is turned on. Real
processes on 127.0.0.1."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable
from pathlib import Path

from lakeshore_fixtures import NymphProc, ServerProc, wait_until

SHARES_SERVER = True  # its tests keep to names of their own: the session's server


def _json_lines(text: str) -> list[dict]:  # type: ignore[type-arg]
    out = []
    for line in text.splitlines():
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


def test_access_log_as_json_lines(start_server: Callable[..., ServerProc]) -> None:
    """One JSON object per request, its fields its own: method, the route's template,
    status, duration, client and the request id (the client's X-Request-ID, echoed)."""
    s = start_server(extra=["--access-log", "--log-format", "json"])
    req = urllib.request.Request(s.url + "/api/namespaces/default/providers")
    req.add_header("Authorization", f"Bearer {s.admin_token}")
    req.add_header("X-Request-ID", "trace-42.a")
    with urllib.request.urlopen(req, timeout=5) as r:
        assert r.status == 200 and r.headers["X-Request-ID"] == "trace-42.a"
    with urllib.request.urlopen(s.url + "/healthz", timeout=5) as r:
        made = r.headers["X-Request-ID"]
        assert r.status == 200 and len(made) == 32  # none sent: one is made
    assert wait_until(lambda: made in s.log_tail(), 60), s.log_tail()
    access = [r for r in _json_lines(s.log_tail()) if r["logger"] == "lakeshore.access"]
    (mine,) = [r for r in access if r["requestId"] == "trace-42.a"]
    assert mine["method"] == "GET" and mine["status"] == 200
    assert mine["route"] == "/api/namespaces/{ns}/providers"
    assert isinstance(mine["durationMs"], float) and mine["client"].startswith("127.0.0.1:")
    assert {"time", "level", "logger", "message"} <= set(mine)
    assert not [r for r in _json_lines(s.log_tail()) if r["logger"] == "uvicorn.access"]


def test_no_access_log_unless_asked(start_server: Callable[..., ServerProc]) -> None:
    s = start_server()
    with urllib.request.urlopen(s.url + "/healthz", timeout=5) as r:
        assert r.status == 200
    s.stop()
    assert "/healthz" not in s.log_tail()


def test_a_bad_log_format_is_refused(
    start_server: Callable[..., ServerProc], tmp_path: Path
) -> None:
    import subprocess

    from lakeshore_fixtures import clean_env, lakeshore_argv

    p = subprocess.run(
        [*lakeshore_argv(), "serve", "--data-dir", str(tmp_path), "--log-format", "xml"],
        capture_output=True, text=True, timeout=60, env=clean_env(), stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert p.returncode == 1 and "log format 'xml'" in p.stderr


def test_nymph_logs_json_lines(server: ServerProc, start_nymph: Callable[..., NymphProc]) -> None:
    n = start_nymph(
        server.url, server.admin_token, provider="logjson", extra=["--log-format", "json"]
    )
    assert wait_until(lambda: "connected to" in n.log(), 90), n.log()
    n.terminate()
    records = _json_lines(n.log())
    assert records and all(r["logger"] == "nymph" for r in records)
    assert any("connected to" in r["message"] for r in records)


def test_nymph_text_log_keeps_its_line_format(
    server: ServerProc, start_nymph: Callable[..., NymphProc]
) -> None:
    n = start_nymph(server.url, server.admin_token, provider="logtext")
    assert wait_until(lambda: "connected to" in n.log(), 90), n.log()
    n.terminate()
    line = next(x for x in n.log().splitlines() if "connected to" in x)
    assert line.split(" ", 2)[1] == "nymph:" and line[:4].isdigit()
