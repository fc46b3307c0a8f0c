"""The control plane's one bounded JSON request (``engine/settings/http_json.py``) against a real HTTP server on 127.0.0.1: lengths, chunks,
errors, proxies and the whole-answer timeout."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from dreamlake.engine.settings import http_json

BODY = {"live": 1, "gone": 0, "instances": [{"instanceId": "i-✓"}]}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        n = int(self.headers.get("Content-Length", "0"))
        echo = json.dumps({"got": json.loads(self.rfile.read(n))}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(echo)))
        self.end_headers()
        self.wfile.write(echo)

    def do_GET(self) -> None:
        data = json.dumps(BODY).encode()
        if self.headers.get("Authorization") != "Bearer t":
            self.send_response(401)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if self.path == "/chunked":
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (data[:5], data[5:]):
                self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
        elif self.path == "/big":
            self.send_header("Content-Length", str(http_json.LIMIT * 2))
            self.end_headers()
            self.wfile.write(b" " * http_json.LIMIT * 2)
        else:
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


AUTH = {"Authorization": "Bearer t", "Accept": "application/json"}


@pytest.mark.parametrize("path", ["/claims", "/chunked", "/claims?x=1"])
def test_socket_path_reads_lengths_and_chunks(server: str, path: str) -> None:
    assert http_json.request_json(server + path, AUTH, timeout=2, loopback=True) == (200, BODY)


def test_non_200_has_no_body(server: str) -> None:
    assert http_json.request_json(server + "/claims", {}, timeout=2, loopback=True) == (401, None)


def test_too_large_is_refused(server: str) -> None:
    with pytest.raises(ValueError):
        http_json.request_json(server + "/big", AUTH, timeout=5, loopback=True)


def test_nothing_listening_raises_quickly() -> None:
    with pytest.raises(OSError):
        http_json.request_json("http://127.0.0.1:9/x", AUTH, timeout=1, loopback=True)


def test_a_proxy_setting_sends_other_hosts_through_the_proxy(
    server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not loopback and a proxy set: the request goes to the proxy (here the test's
    own server on 127.0.0.1, which answers for the absolute URL it is asked)."""
    monkeypatch.setenv("http_proxy", server)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    got = http_json.request_json(
        "http://control-plane.test/claims", AUTH, timeout=2, loopback=False
    )
    assert got == (200, BODY)


def test_loopback_never_goes_through_a_proxy(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    assert http_json.request_json(server + "/claims", AUTH, timeout=2, loopback=True) == (200, BODY)


def test_a_json_body_is_sent_with_its_length(server: str) -> None:
    body = {"providers": [{"name": "a✓"}]}
    got = http_json.request_json(
        server + "/q", AUTH, method="POST", body=body, timeout=2, loopback=True
    )
    assert got == (200, {"got": body})


def test_a_slow_drip_answer_is_bounded_by_the_timeout_as_a_whole() -> None:
    """A server that sends one byte at a time, each well within the timeout, still
    ends the request at about the timeout (status must never hang on it)."""
    import socket
    import time

    stop = threading.Event()
    lsock = socket.create_server(("127.0.0.1", 0))
    port = lsock.getsockname()[1]

    def drip() -> None:
        conn, _ = lsock.accept()
        with conn:
            conn.recv(65536)
            while not stop.is_set():
                try:
                    conn.sendall(b" ")
                except OSError:
                    return
                time.sleep(0.05)

    t = threading.Thread(target=drip, daemon=True)
    t.start()
    started = time.monotonic()
    try:
        with pytest.raises(OSError):
            http_json.request_json(f"http://127.0.0.1:{port}/", {}, timeout=0.5, loopback=True)
        assert time.monotonic() - started < 5  # per-read timeouts alone never end it
    finally:
        stop.set()
        lsock.close()
        t.join(timeout=5)
