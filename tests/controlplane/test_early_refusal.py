"""A request with a body and no credential is refused 401 from its headers, on a
real ``lakeshore serve``: its body is never read, the connection is closed, and the
answer is the access gate's, byte for byte but the request's id and its time
(``controlplane/server/access/early.py``)."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from dreamlake.controlplane.server.access import early
from lakeshore_fixtures import ServerProc, free_port

NS_PATH = "/api/namespaces/default/tokens"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProc]:
    data = tmp_path_factory.mktemp("early") / "data"
    proc = ServerProc(data_dir=data, port=free_port()).start()
    try:
        yield proc
    finally:
        proc.stop()


def _exchange(port: int, head: bytes, body: bytes = b"") -> tuple[int, dict[str, str], bytes]:
    """Send ``head`` and ``body`` on a new connection; the status, the headers and
    the body of the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head + body)
        raw = b""
        while b"\r\n\r\n" not in raw:
            chunk = sock.recv(65536)
            assert chunk, raw
            raw += chunk
        top, _, rest = raw.partition(b"\r\n\r\n")
        lines = top.decode("latin-1").split("\r\n")
        headers = dict(line.split(": ", 1) for line in lines[1:])
        headers = {k.lower(): v for k, v in headers.items()}
        while len(rest) < int(headers["content-length"]):
            chunk = sock.recv(65536)
            assert chunk
            rest += chunk
    return int(lines[0].split(" ")[1]), headers, rest


def _post_head(length: int, *extra: str, path: str = NS_PATH) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json"]
    lines += [*extra, f"Content-Length: {length}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _read_bytes(pid: int) -> int:
    """What the process has read so far (sockets included)."""
    text = Path(f"/proc/{pid}/io").read_text()
    return int(re.search(r"^rchar: (\d+)$", text, re.M).group(1))  # type: ignore[union-attr]


def test_a_large_body_without_a_token_is_refused_unread(server: ServerProc) -> None:
    assert server.proc is not None
    declared = 256 * 1024 * 1024  # 256 MiB declared, far over any limit
    before = _read_bytes(server.proc.pid)
    sent = 0
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(_post_head(declared))
        chunk = b"1," * 32768
        refused_at = None
        started = time.monotonic()
        while sent < 64 * 1024 * 1024 and time.monotonic() - started < 20:
            try:
                sent += sock.send(chunk)
            except (BrokenPipeError, ConnectionResetError):
                refused_at = sent
                break
        assert refused_at is not None, "the server kept reading a body it refused"
    # what the server read is the first buffer of the connection at most (its
    # headers and what came with them), not the megabytes the client pushed
    read = _read_bytes(server.proc.pid) - before
    assert read < 1024 * 1024, read
    assert refused_at < 16 * 1024 * 1024, refused_at


def test_the_answer_is_the_gates(server: ServerProc) -> None:
    # with a body: refused from the headers; without one: by the access gate
    early_status, early_headers, early_body = _exchange(
        server.port, _post_head(4096, "X-Request-ID: early-1"), b"{" + b" " * 4094 + b"}"
    )
    gate_status, gate_headers, gate_body = _exchange(
        server.port, _post_head(0, "X-Request-ID: gate-1")
    )
    assert early_status == gate_status == 401
    assert early_headers["connection"] == "close"  # the body is never read
    assert early_headers["x-request-id"] == "early-1"
    assert early_headers["server-timing"].startswith("app;dur=")
    assert early_headers["content-type"] == "application/problem+json"
    assert early_headers["www-authenticate"] == "Bearer"
    same = {"date", "server-timing", "x-request-id", "connection", "content-length"}
    assert {k: v for k, v in early_headers.items() if k not in same} == {
        k: v for k, v in gate_headers.items() if k not in same
    }
    assert list(early_headers) == [*list(gate_headers)[:3], "connection", *list(gate_headers)[3:]]
    problem = json.loads(early_body)
    assert problem == {**json.loads(gate_body), "instance": "early-1"}
    assert problem["detail"] == early.MISSING_TOKEN
    assert problem["error"] == problem["kind"] == "unauthorized"
    # a new id when the client sends none, echoed in the body
    _, headers, body = _exchange(server.port, _post_head(2), b"{}")
    assert re.fullmatch(r"[0-9a-f]{32}", headers["x-request-id"])
    assert json.loads(body)["instance"] == headers["x-request-id"]


def test_what_names_no_bearer_token_is_refused_alike(server: ServerProc) -> None:
    for extra in ("Authorization: Basic dXNlcjpwdw==", "Authorization: Bearer  "):
        status, headers, body = _exchange(server.port, _post_head(2, extra), b"{}")
        assert (status, headers["connection"]) == (401, "close")
        assert json.loads(body)["detail"] == early.MISSING_TOKEN
    # a path no route serves, with a body: a token is needed there too (the gate's rule)
    status, _, body = _exchange(server.port, _post_head(2, path="/api/nothing/here"), b"{}")
    assert (status, json.loads(body)["error"]) == (401, "unauthorized")
    # chunked: a body all the same
    head = (
        f"POST {NS_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
    ).encode()
    status, headers, _ = _exchange(server.port, head, b"2\r\n{}\r\n0\r\n\r\n")
    assert (status, headers["connection"]) == (401, "close")


def test_a_token_or_a_public_route_goes_on(server: ServerProc) -> None:
    body = json.dumps({"label": "early refusal, not this one"}).encode()
    token = f"Authorization: Bearer {server.admin_token}"
    status, _, out = _exchange(server.port, _post_head(len(body), token), body)
    assert status == 201, out
    assert json.loads(out)["token"]
    # a token the gate does not know: its answer (it looks the token up), not this one
    status, headers, out = _exchange(
        server.port, _post_head(2, "Authorization: Bearer nope"), b"{}"
    )
    assert status == 401
    assert json.loads(out)["detail"] != early.MISSING_TOKEN
    # the sign-in form is public: its body is read and answered by its route
    form = b"token=nope"
    head = (
        "POST /ui/login HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Content-Type: application/x-www-form-urlencoded\r\n"
        f"Content-Length: {len(form)}\r\n\r\n"
    ).encode()
    status, headers, _ = _exchange(server.port, head, form)
    assert headers.get("connection") != "close"
    assert status != 401 or headers.get("www-authenticate") is None


def test_refusals_are_counted_as_the_gates(server: ServerProc) -> None:
    def counts() -> tuple[float, float]:
        req = urllib.request.Request(
            server.url + "/metrics", headers={"Authorization": f"Bearer {server.admin_token}"}
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            text = resp.read().decode()
        missing = re.search(
            r'^lakeshore_token_refusals_total\{reason="missing"\} (\S+)$', text, re.M
        )
        timed = re.search(
            r'^lakeshore_http_request_duration_seconds_count\{method="POST",'
            r'route="/api/namespaces/[^"]*/tokens",status="4xx"\} (\S+)$',
            text,
            re.M,
        )
        return (
            float(missing.group(1)) if missing else 0.0,
            float(timed.group(1)) if timed else 0.0,
        )

    before = counts()
    for _ in range(3):
        _exchange(server.port, _post_head(2), b"{}")
    after = counts()
    assert after[0] - before[0] == 3
    assert after[1] - before[1] == 3


def test_only_the_httptools_protocol_is_wrapped() -> None:
    from uvicorn.protocols.http.h11_impl import H11Protocol
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    wrapped = early.refusing(HttpToolsProtocol, object())
    assert issubclass(wrapped, HttpToolsProtocol) and wrapped is not HttpToolsProtocol
    assert early.refusing(H11Protocol, object()) is H11Protocol


class _Transport:
    def __init__(self) -> None:
        self.paused = self.closing = False

    def pause_reading(self) -> None:
        self.paused = True

    def is_closing(self) -> bool:
        return self.closing


def test_refusals_beyond_the_pace_wait_their_turn() -> None:
    async def run() -> None:
        refusals = early.Refusals(object(), pace=10, hold=8)
        sent: list[int] = []
        transports = [_Transport() for _ in range(20)]
        started = time.monotonic()
        for i, transport in enumerate(transports[:12]):
            refusals.answer(lambda i=i: sent.append(i), transport)
        # a second's worth at once; the rest held, their reading paused
        assert sent == list(range(10))
        assert [t.paused for t in transports[:12]] == [False] * 10 + [True] * 2
        transports[10].closing = True  # that client gave up: never answered
        for i, transport in enumerate(transports[12:19], start=12):
            refusals.answer(lambda i=i: sent.append(i), transport)
        # past the bound on held connections: answered at once, not held
        assert sent[-1] == 18 and not transports[18].paused
        while len(sent) < 18:
            await asyncio.sleep(0.02)
        took = time.monotonic() - started
        assert sent == [*range(10), 18, 11, *range(12, 18)]
        assert 0.6 < took < 5, took  # 7 more at 10 a second

    asyncio.run(run())


def test_a_burst_without_tokens_is_answered_in_full(server: ServerProc) -> None:
    import concurrent.futures

    n = early.PACE + 10
    with concurrent.futures.ThreadPoolExecutor(n) as pool:
        answers = list(
            pool.map(lambda _: _exchange(server.port, _post_head(2), b"{}")[0], range(n))
        )
    assert answers == [401] * n


def test_nothing_pipelined_after_a_refusal_is_served(server: ServerProc) -> None:
    token = f"Authorization: Bearer {server.admin_token}"
    after = b"GET /api/whoami HTTP/1.1\r\nHost: 127.0.0.1\r\n" + token.encode() + b"\r\n\r\n"
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(_post_head(2) + b"{}" + after)
        raw = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            raw += chunk
    assert raw.startswith(b"HTTP/1.1 401 ")
    assert raw.count(b"HTTP/1.1 ") == 1


def test_a_token_already_refused_is_refused_alike(server: ServerProc) -> None:
    made_up = "Authorization: Bearer lks_made-up-for-this-test"
    # the first time the gate looks it up; from then on it is refused from memory,
    # here before the body is read: the same answer either way
    first = _exchange(server.port, _post_head(2, made_up, "X-Request-ID: r-1"), b"{}")
    again = _exchange(server.port, _post_head(2, made_up, "X-Request-ID: r-2"), b"{}")
    assert first[0] == again[0] == 401
    assert json.loads(again[2]) == {**json.loads(first[2]), "instance": "r-2"}
    assert json.loads(again[2])["detail"] != early.MISSING_TOKEN
    same = {"date", "server-timing", "x-request-id"}
    assert [k for k in again[1] if k not in same] == [k for k in first[1] if k not in same]
    assert again[1]["connection"] == "close"


def test_refused_reads_the_servers_memory_of_refused_tokens() -> None:
    from types import SimpleNamespace

    from dreamlake.controlplane.server.access import scopes
    from dreamlake.controlplane.server.access.tokens import hash_token
    from dreamlake.controlplane.server.deps import refused_of
    from dreamlake.controlplane.server.errors import ApiError

    rules = scopes.rules_for([(frozenset({"POST"}), scopes.NS + "/tokens")])
    state = SimpleNamespace(route_rules=rules)
    refusals = early.Refusals(state)

    def scope(*headers: tuple[bytes, bytes]) -> dict[str, object]:
        return {
            "method": "POST",
            "path": NS_PATH,
            "headers": [(b"content-length", b"2"), *headers],
            "state": {},
        }

    gone = ApiError(401, "unauthorized", "unknown or revoked token")
    refused_of(state).add(hash_token("gone"), gone)
    assert refusals.refused(scope((b"authorization", b"Bearer fine"))) is None
    found = refusals.refused(scope((b"authorization", b"Bearer gone")))
    assert found is not None and (found[1].status, found[1].detail) == (401, gone.detail)
    found = refusals.refused(scope())
    assert found is not None and found[1].detail == early.MISSING_TOKEN


def test_the_docs_state_the_pace() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "controlplane.md").read_text()
    assert f"at most {early.PACE} a second are answered ({early.PACE} at once" in text
    assert f"up to {early.HOLD_AT_MOST:,} held" in text
