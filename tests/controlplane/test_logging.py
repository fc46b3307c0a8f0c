"""``lakeshore serve`` and ``nymph`` log through ``logging``: text by default, JSON
lines on request, and the server's access log only when it is turned on. Real
processes on 127.0.0.1."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable
from pathlib import Path

from lakeshore_fixtures import NymphProc, ServerProc, wait_until


def _json_lines(text: str) -> list[dict]:  # type: ignore[type-arg]
    out = []
    for line in text.splitlines():
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


def test_access_log_as_json_lines(start_server: Callable[..., ServerProc]) -> None:
    s = start_server(extra=["--access-log", "--log-format", "json"])
    with urllib.request.urlopen(s.url + "/healthz", timeout=5) as r:
        assert r.status == 200
    assert wait_until(lambda: "/healthz" in s.log_tail(), 10), s.log_tail()
    records = _json_lines(s.log_tail())
    access = [r for r in records if r["logger"] == "uvicorn.access"]
    assert access and "GET /healthz" in access[-1]["message"]
    assert {"time", "level", "logger", "message"} <= set(access[-1])


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
    assert wait_until(lambda: "connected to" in n.log(), 20), n.log()
    n.terminate()
    records = _json_lines(n.log())
    assert records and all(r["logger"] == "nymph" for r in records)
    assert any("connected to" in r["message"] for r in records)


def test_nymph_text_log_keeps_its_line_format(
    server: ServerProc, start_nymph: Callable[..., NymphProc]
) -> None:
    n = start_nymph(server.url, server.admin_token, provider="logtext")
    assert wait_until(lambda: "connected to" in n.log(), 20), n.log()
    n.terminate()
    line = next(x for x in n.log().splitlines() if "connected to" in x)
    assert line.split(" ", 2)[1] == "nymph:" and line[:4].isdigit()
