"""TLS session resumption in the control plane's client (controlplane/tlsresume.py),
against a real TLS server on 127.0.0.1 (the standard library's HTTP server in a
thread: what matters here is the TLS, the real lakeshore is in
test_daemon_certs.py): the second connection resumes the first's session, a
restarted server (new ticket keys, the same port) makes a full handshake whose
session replaces the old, a connection that fails while offering one drops it,
and a session is never offered with another context (a renewed certificate)."""

from __future__ import annotations

import http.server
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dreamlake.controlplane.client import Client, Unreachable
from dreamlake.controlplane.tlsclient import client_context
from dreamlake.controlplane.tlsresume import Sessions


class _Ok(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


class _TlsServer:
    """One TLS HTTP server on ``port`` (0: a free one); a new one on the same port
    is a restarted server: new ticket keys, so no session of the old resumes."""

    def __init__(self, pki: Path, port: int = 0) -> None:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(pki / "server.crt", pki / "server.key")
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), _Ok, False)
        self.httpd.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.httpd.server_bind()
        self.httpd.server_activate()
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(10)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from dreamlake.controlplane.server.builtin_ca import issue_server, make_ca

    folder = tmp_path_factory.mktemp("pki")
    ca_pem, ca_key = make_ca("resumption test CA")
    cert, key = issue_server(ca_pem, ca_key, ["127.0.0.1"])
    (folder / "ca.crt").write_bytes(ca_pem)
    (folder / "server.crt").write_bytes(cert)
    (folder / "server.key").write_bytes(key)
    return folder


@pytest.fixture
def server(pki: Path) -> Iterator[_TlsServer]:
    running = _TlsServer(pki)
    yield running
    running.stop()


def _resumed(client: Client, seen: list[Any]) -> bool:
    client.request("GET", "/")
    (last,) = [e for e in seen[-1:] if e.new_connection]
    return bool(last.resumed)


def _client(url: str, pki: Path, seen: list[Any]) -> Client:
    return Client(url, ca=str(pki / "ca.crt"), observer=seen.append)


def test_the_next_connection_resumes_and_a_restarted_server_shakes_hands_anew(
    server: _TlsServer, pki: Path
) -> None:
    seen: list[Any] = []
    client = _client(f"https://127.0.0.1:{server.port}", pki, seen)
    assert not _resumed(client, seen)
    assert _resumed(client, seen)
    assert _resumed(client.sibling(), seen)  # siblings share the sessions
    server.stop()
    again = _TlsServer(pki, server.port)  # restarted: its tickets are new
    try:
        assert not _resumed(client, seen)  # a full handshake, not an error
        assert _resumed(client, seen)  # with the new server's session
    finally:
        server.httpd, server.thread = again.httpd, again.thread  # the fixture stops it


def test_a_connection_that_fails_while_offering_a_session_drops_it(
    server: _TlsServer, pki: Path
) -> None:
    seen: list[Any] = []
    client = _client(f"https://127.0.0.1:{server.port}", pki, seen)
    client.request("GET", "/")
    assert len(client.sessions) == 1
    server.stop()  # nothing listens on the port now
    with pytest.raises(Unreachable):
        client.request("GET", "/")
    assert len(client.sessions) == 0


def test_a_session_is_offered_only_with_the_context_it_was_made_with(
    server: _TlsServer, pki: Path, tmp_path: Path
) -> None:
    """A renewed client certificate is a new context: the session of the old one is
    dropped, never offered with the new (the server would resume the old identity)."""
    seen: list[Any] = []
    client = _client(f"https://127.0.0.1:{server.port}", pki, seen)
    client.request("GET", "/")
    origin = f"127.0.0.1:{server.port}"
    context = client_context(str(pki / "ca.crt"))
    assert client.sessions.offer(origin, context) is not None
    other = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    assert client.sessions.offer(origin, other) is None
    assert client.sessions.offer(origin, context) is None  # dropped
    assert not _resumed(client, seen)


def test_sessions_keep_only_what_can_be_resumed() -> None:
    sessions = Sessions()
    context = object()
    sessions.keep("h:1", context, None, None, False)
    assert len(sessions) == 0

    class Ticket:
        has_ticket, id = True, b"x"

    offered = Ticket()
    sessions.keep("h:1", context, offered, None, False)
    assert sessions.offer("h:1", context) is offered
    # offered, not resumed, and no new session came: the offered one is dropped
    sessions.keep("h:1", context, None, offered, False)
    assert sessions.offer("h:1", context) is None
