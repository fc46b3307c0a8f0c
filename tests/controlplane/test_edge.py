"""The TLS edge processes on their own (``controlplane/server/edge/``): real edge
processes (:class:`Edges`, as ``lakeshore serve`` starts them) on a real listening
socket on 127.0.0.1, the test standing where the server stands, on the Unix socket
they relay to.

* A client's certificate reaches the server byte for byte, with its address, and
  the bytes flow both ways; a session resumes on another edge (shared tickets).
* A connection whose client closed it, or whose first bytes waited too long, while
  nothing accepted (the edges not started yet), is reset without a handshake, and
  counted.
* An edge killed with SIGKILL is started again (and counted); the port keeps working.
* A reload reaches the edges: a new connection gets the new certificate.
* Stopping: the port closes at once, what is relayed keeps flowing until the server
  closes it, then the edge ends.
"""

from __future__ import annotations

import signal
import socket
import ssl
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from dreamlake.controlplane.client import Client
from dreamlake.controlplane.nymph.keypair import KeyPair
from dreamlake.controlplane.server.builtin_ca import issue_server, make_ca
from dreamlake.controlplane.server.edge import stale, wire
from dreamlake.controlplane.server.edge.supervisor import Edges
from dreamlake.controlplane.server.fleet.serving import listening_sockets
from dreamlake.controlplane.server.identity.issue import sign
from dreamlake.controlplane.server.metrics.registry import ServerMetrics
from lakeshore_fixtures import wait_until

pytestmark = pytest.mark.slow


class Pki(SimpleNamespace):
    folder: Path
    ca: Path
    cert: Path
    key: Path
    client: Path  # the daemon's certificate and key, PEM
    client_der: bytes
    client_ca_pem: bytes
    ca_pair: tuple[bytes, Any]  # the server certificate's CA, to issue another


def _pki(folder: Path) -> Pki:
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import Encoding

    folder.mkdir(parents=True, exist_ok=True)
    ca_pem, ca_key = make_ca("edge test CA")
    cert, key = issue_server(ca_pem, ca_key, ["127.0.0.1"])
    daemons_pem, daemons_key = make_ca("daemons' CA")
    pair = KeyPair()
    signed = sign(pair.csr_pem("x"), daemons_pem, daemons_key, namespace="edge",
                  provider="lab", instance=None)  # fmt: skip
    paths = {n: folder / n for n in ("ca.crt", "server.crt", "server.key", "daemon.pem")}
    paths["ca.crt"].write_bytes(ca_pem)
    paths["server.crt"].write_bytes(cert)
    paths["server.key"].write_bytes(key)
    paths["daemon.pem"].write_bytes(signed.pem + pair.key_pem())
    der = x509.load_pem_x509_certificate(signed.pem).public_bytes(Encoding.DER)
    return Pki(folder=folder, ca=paths["ca.crt"], cert=paths["server.crt"],
               key=paths["server.key"], client=paths["daemon.pem"], client_der=der,
               client_ca_pem=daemons_pem, ca_pair=(ca_pem, ca_key))  # fmt: skip


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return _pki(tmp_path_factory.mktemp("edge-pki"))


def _edges(pki: Pki, count: int = 2, start: bool = True, **kw: Any) -> Edges:
    listeners = listening_sockets("127.0.0.1", 0, 2, 128)
    metrics = ServerMetrics()
    edges = Edges(count, listeners, cert=str(pki.cert), key=str(pki.key),
                  client_ca=pki.client_ca_pem, state=SimpleNamespace(metrics=metrics),
                  backlog=128, drain_seconds=20, **kw)  # fmt: skip
    edges.port = listeners[0].getsockname()[1]  # type: ignore[attr-defined]
    edges.metrics = metrics  # type: ignore[attr-defined]
    return edges.start() if start else edges


@pytest.fixture
def edges(pki: Pki) -> Iterator[Edges]:
    edges = _edges(pki)
    try:
        yield edges
    finally:
        edges.stop()


def _context(pki: Pki, cert: bool = True) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(pki.ca))
    if cert:
        context.load_cert_chain(str(pki.client))
    return context


def _connect(edges: Edges, context: ssl.SSLContext, **kw: Any) -> ssl.SSLSocket:
    raw = socket.create_connection(("127.0.0.1", edges.port), timeout=30)  # type: ignore[attr-defined]
    return context.wrap_socket(raw, server_hostname="127.0.0.1", **kw)


def _relayed(edges: Edges) -> tuple[socket.socket, wire.Preamble, bytes]:
    """Accept the next relayed connection where the server would, and read its preamble."""
    edges.unix.settimeout(30)
    conn, _ = edges.unix.accept()
    conn.settimeout(30)
    pid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[0]
    assert edges.is_edge(pid)
    buffer = b""
    while not (size := wire.needed(buffer)) or len(buffer) < size:
        chunk = conn.recv(65536)
        assert chunk, "the edge closed before its preamble"
        buffer += chunk
    return conn, wire.decode(buffer), buffer[size:]


def _value(metrics: ServerMetrics, name: str, **labels: str) -> float:
    value = metrics.registry.get_sample_value(name, labels or None)
    return value or 0.0


def test_the_client_certificate_and_address_are_relayed_byte_for_byte(
    edges: Edges, pki: Pki
) -> None:
    client = _connect(edges, _context(pki))
    client.sendall(b"GET / HTTP/1.1\r\n\r\n")
    conn, said, rest = _relayed(edges)
    try:
        assert said.cert == pki.client_der
        assert said.peer == client.getsockname()[:2]
        assert said.local == ("127.0.0.1", edges.port)  # type: ignore[attr-defined]
        while len(rest) < 18:
            rest += conn.recv(65536)
        assert rest == b"GET / HTTP/1.1\r\n\r\n"
        conn.sendall(b"HTTP/1.1 204 No Content\r\n\r\n")
        assert client.recv(65536) == b"HTTP/1.1 204 No Content\r\n\r\n"
        big = bytes(range(256)) * 4096  # 1 MiB each way, through the flow control
        threading.Thread(target=conn.sendall, args=(big,), daemon=True).start()
        got = b""
        while len(got) < len(big):
            got += client.recv(1 << 20)
        assert got == big
    finally:
        conn.close()
        client.close()
    # a client without a certificate is relayed with none
    bare = _connect(edges, _context(pki, cert=False))
    conn, said, _ = _relayed(edges)
    assert said.cert is None and said.peer == bare.getsockname()[:2]
    conn.close()
    bare.close()
    assert wait_until(lambda: _value(edges.metrics, "lakeshore_tls_handshakes_total",  # type: ignore[attr-defined]
                                     outcome="done") == 2, 30)  # fmt: skip


def test_a_session_resumes_on_any_edge(edges: Edges, pki: Pki) -> None:
    context = _context(pki)
    session = None
    resumed = []
    for _ in range(8):
        client = _connect(edges, context, session=session)
        client.sendall(b"x")
        conn, _, _ = _relayed(edges)
        conn.sendall(b"y")
        assert client.recv(1) == b"y"  # the session's ticket came before this
        resumed.append(client.session_reused)
        session = client.session
        conn.close()
        client.close()
    assert resumed == [False] + [True] * 7


def test_a_stale_queued_connection_is_reset_without_a_handshake(pki: Pki) -> None:
    edges = _edges(pki, start=False, stale_after_ms=300)
    try:
        gone = socket.create_connection(("127.0.0.1", edges.port), timeout=30)  # type: ignore[attr-defined]
        gone.close()  # given up while nothing accepted: CLOSE_WAIT in the queue
        waiting = socket.create_connection(("127.0.0.1", edges.port), timeout=30)  # type: ignore[attr-defined]
        waiting.sendall(b"\x16\x03\x01")  # the start of a hello, then a long wait
        time.sleep(0.6)
        edges.start()
        metrics = edges.metrics  # type: ignore[attr-defined]
        assert wait_until(
            lambda: (
                _value(metrics, "lakeshore_tls_stale_connections_total", reason="closed") == 1
                and _value(metrics, "lakeshore_tls_stale_connections_total", reason="waited") == 1
            ),
            30,
        )
        with pytest.raises(ConnectionResetError):  # reset: it learns at once
            waiting.recv(1)
        waiting.close()
        # neither was handshaken; a fresh one is
        client = _connect(edges, _context(pki))
        client.sendall(b"x")
        conn, said, _ = _relayed(edges)
        assert said.cert == pki.client_der
        conn.close()
        client.close()
        assert _value(metrics, "lakeshore_tls_handshakes_total", outcome="failed") == 0
    finally:
        edges.stop()


def test_the_stale_bound_is_under_a_daemons_wait() -> None:
    assert 0.5 * Client.timeout * 1000 < stale.STALE_AFTER_MS < Client.timeout * 1000
    ours, theirs = socket.socketpair()  # not TCP: nothing to say, served
    assert stale.why_stale(ours) is None
    ours.close()
    theirs.close()


def test_a_killed_edge_is_started_again(edges: Edges, pki: Pki) -> None:
    first = sorted(edges.pids)
    victim = edges.edges[0].proc
    victim.send_signal(signal.SIGKILL)
    assert wait_until(lambda: len(edges.pids) == 2 and victim.pid not in edges.pids, 30)
    assert edges.restarts == 1 and sorted(edges.pids) != first
    assert _value(edges.metrics, "lakeshore_tls_edge_restarts_total") == 1  # type: ignore[attr-defined]
    for _ in range(4):  # whichever edge takes it
        client = _connect(edges, _context(pki))
        client.sendall(b"x")
        conn, said, _ = _relayed(edges)
        assert said.cert == pki.client_der
        conn.close()
        client.close()


def test_a_reload_reaches_the_edges(pki: Pki, tmp_path: Path) -> None:
    from cryptography import x509

    own = _pki(tmp_path / "own")
    edges = _edges(own)
    try:
        ca_pem, ca_key = own.ca_pair
        new_cert, new_key = issue_server(ca_pem, ca_key, ["127.0.0.1"])
        own.cert.write_bytes(new_cert)
        own.key.write_bytes(new_key)
        edges.reload()
        wanted = x509.load_pem_x509_certificate(new_cert).serial_number

        def served() -> bool:
            client = _connect(edges, _context(own))
            serial = int(str(client.getpeercert()["serialNumber"]), 16)
            client.close()
            conn, _, _ = _relayed(edges)
            conn.close()
            return serial == wanted

        # every edge, whichever takes the connection
        assert wait_until(lambda: all(served() for _ in range(6)), 30)
    finally:
        edges.stop()


def test_stopping_closes_the_port_and_drains_what_is_relayed(edges: Edges, pki: Pki) -> None:
    client = _connect(edges, _context(pki))
    client.sendall(b"before")
    conn, _, rest = _relayed(edges)
    procs = [e.proc for e in edges.edges]
    edges.stop_accepting()
    with pytest.raises(ConnectionRefusedError):  # the port is closed at once ...
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # (once every edge has had the signal)
            socket.create_connection(("127.0.0.1", edges.port), timeout=5).close()  # type: ignore[attr-defined]
            time.sleep(0.1)
    client.sendall(b" after")  # ... what is open is still relayed
    while len(rest) < len(b"before after"):
        rest += conn.recv(65536)
    assert rest == b"before after"
    conn.sendall(b"answered")
    assert client.recv(65536) == b"answered"
    assert any(p.poll() is None for p in procs)  # the edge relaying it waits for it
    conn.close()  # the server closed it: the client sees the end, the edges end
    assert client.recv(65536) == b""
    client.close()
    assert wait_until(lambda: all(p.poll() is not None for p in procs), 30)
