"""A kept connection the server closes is not a refused client certificate: a real
``lakeshore serve`` over TLS on 127.0.0.1 (its own CA, keep-alive 1 s), a daemon's
client holding a valid certificate the server signed. The server closing an idle
kept connection, closing it as the next request goes out, or going away under a
held poll (killed, then started again) ends in an answer on a new connection or
in :class:`Unreachable`; never in "does not accept the client certificate". A
certificate the server does refuse is still said to be (``test_daemon_certs``)."""

from __future__ import annotations

import http.client
import logging
import select
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from dreamlake.controlplane.client import Client, Unreachable, Untrusted
from dreamlake.controlplane.connection import RESEND_WITHIN, Connection, Dropped, Exchange
from dreamlake.controlplane.nymph.credentials import Credentials
from dreamlake.controlplane.nymph.daemon import Daemon, DaemonConfig
from dreamlake.controlplane.tlsclient import answers_without_cert, refused_cert_hint
from lakeshore_fixtures import clean_env, wait_until
from test_tls_serving import Pki, TlsServer, _pki, _serve, _stop

REFUSED = "does not accept the client certificate"
ENV = {"LAKESHORE_KEEP_ALIVE_SECONDS": "1"}  # an idle kept connection is closed after 1 s


@dataclass
class Plane:
    server: TlsServer
    pki: Pki

    def admin(self) -> Client:
        return Client(self.server.url, self.server.admin_token, ca=str(self.pki.ca))


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    tmp = tmp_path_factory.mktemp("kept")
    pki = _pki(tmp / "pki", ["localhost", "127.0.0.1"])
    server = _serve(
        tmp, "--tls-cert", str(pki.cert), "--tls-key", str(pki.key),
        ca=pki.ca, probe=False, env=ENV,
    )  # fmt: skip
    got = Plane(server, pki)
    yield got
    _stop(got.server)


def _enrolled(plane: Plane, folder: Path, ns: str) -> tuple[Credentials, Client, list[Exchange]]:
    """A keep-alive client of namespace ``ns`` presenting a certificate it got with
    a bootstrap token, and what its connection observed."""
    plane.admin().create_namespace(ns)
    token = plane.admin().create_token(ns, scope="bootstrap", provider="lab", host="host-a")
    creds = Credentials(folder, ns, "lab", lambda: token)
    seen: list[Exchange] = []
    client = Client(
        plane.server.url, namespace=ns, ca=str(plane.pki.ca), keep_alive=True,
        observer=seen.append,
    )  # fmt: skip
    creds.step(client)
    assert client.cert is not None and client.token is None
    return creds, client, seen


def _closed_by_server(conn: Connection) -> bool:
    """Whether the server has closed ``conn``'s kept socket (readable while idle)."""
    kept = conn._conn
    assert kept is not None and kept.sock is not None
    return bool(select.select([kept.sock], [], [], 0.2)[0])


def test_an_idle_kept_connection_the_server_closed_is_replaced(
    plane: Plane, tmp_path: Path
) -> None:
    _, client, seen = _enrolled(plane, tmp_path / "id", "kept-a")
    assert client.whoami()["scope"] == "daemon"
    assert wait_until(lambda: _closed_by_server(client.connection), 30)
    assert client.whoami()["scope"] == "daemon"
    last = seen[-1]  # answered on a new connection, with nothing failed before it
    assert (last.status, last.new_connection, seen[-2].status) == (200, True, 200)


def test_a_kept_connection_closed_as_the_request_goes_out(
    plane: Plane, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server's close arriving just after the client looked at the idle
    connection: the look is made to miss it (the one stand-in here, for a timing
    a test cannot hit at will), the server's close is real. An idempotent request
    is answered on a new connection; a POST, which the server might have taken,
    is raised as unreachable, not as a refused certificate."""
    _, client, seen = _enrolled(plane, tmp_path / "id", "kept-b")
    worker = client.register("lab", "i-1", host="host-a")["workerId"]
    assert wait_until(lambda: _closed_by_server(client.connection), 30)
    monkeypatch.setattr(Connection, "_usable", lambda self, conn: True)

    assert client.whoami()["provider"] == "lab"
    failed, answered = seen[-2:]
    assert failed.status is None and not failed.new_connection
    assert not isinstance(failed.error, Dropped) and failed.error is not None
    assert answered.status == 200 and answered.new_connection

    assert wait_until(lambda: _closed_by_server(client.connection), 30)
    with pytest.raises(Unreachable) as dropped:
        client.heartbeat(worker)
    assert not isinstance(dropped.value, Untrusted)
    assert REFUSED not in str(dropped.value)
    assert "closed a kept connection before answering" in str(dropped.value)
    assert isinstance(seen[-1].error, Dropped)
    client.heartbeat(worker)  # the caller's next try: a new connection


def test_a_held_poll_this_client_aborts_is_not_a_refused_certificate(
    plane: Plane, tmp_path: Path
) -> None:
    """A daemon stopping (suspend, stop) ends its held poll itself; when that poll is
    the first request of a new connection, the close it meets is its own."""
    _, client, _ = _enrolled(plane, tmp_path / "id", "kept-d")
    worker = client.register("lab", "i-1", host="host-a")["workerId"]
    poller = client.sibling()  # a connection of its own: the poll is its first request
    raised: list[BaseException] = []

    def poll() -> None:
        try:
            poller.poll_work(worker, wait=30)
        except Exception as exc:
            raised.append(exc)

    held = threading.Thread(target=poll)
    held.start()
    assert wait_until(lambda: poller.connection._active is not None, 30)
    poller.abort()
    held.join(20)
    assert not held.is_alive() and len(raised) == 1
    assert isinstance(raised[0], Unreachable) and not isinstance(raised[0], Untrusted)
    assert "this client ended the request" in str(raised[0]), raised[0]


def test_what_the_certificate_hint_is_given_for(plane: Plane, tmp_path: Path) -> None:
    """The hint is for a new connection closed unanswered; a Dropped (a kept
    connection the server closed, or one aborted) is never one. Whether the server
    answers a connection without a certificate tells a refusal from a server
    going away."""
    url, pem = plane.server.url, str(tmp_path / "daemon.pem")
    closed = http.client.RemoteDisconnected("Remote end closed connection without response")
    hint = refused_cert_hint(closed, url, pem)
    assert hint is not None and hint.reason == "client_cert_refused"
    assert REFUSED in str(hint)
    assert refused_cert_hint(Dropped(closed), url, pem) is None
    assert refused_cert_hint(Dropped(closed, aborted=True), url, pem) is None
    assert refused_cert_hint(closed, url, None) is None  # no certificate presented
    assert answers_without_cert(url, str(plane.pki.ca))
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        gone = f"https://127.0.0.1:{unused.getsockname()[1]}"
    assert not answers_without_cert(gone, str(plane.pki.ca))


def _restart(plane: Plane) -> None:
    """Start the killed server again: same port, same data, same certificate."""
    server = plane.server
    with open(server.log, "ab") as out:
        server.proc = subprocess.Popen(
            server.proc.args, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
            env=clean_env(**ENV),
        )  # fmt: skip
    assert wait_until(lambda: plane.admin().healthz() is not None, 90), server.output()


def test_a_daemon_whose_server_goes_away_under_its_held_poll(
    plane: Plane, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The daemon's own loops, long-polling on a kept connection presenting its
    certificate; the server is killed under a poll held past RESEND_WITHIN (not
    sent again: the fleet's backoff spreads it), then started again: the daemon
    logs it unreachable (the kept connection closed), never that the server
    refused its certificate, and comes back by itself."""
    caplog.set_level(logging.INFO, logger="nymph")
    creds, client, _ = _enrolled(plane, tmp_path / "id", "kept-c")
    config = DaemonConfig("lab", ["default"], "i-1", "host-a", "test", poll_wait=2.0,
                          max_backoff=1.0)  # fmt: skip
    daemon = Daemon(client, config, credentials=creds)
    answered: list[float] = []
    daemon.poller.observer = lambda e: answered.append(time.monotonic())
    threads = daemon.start()

    def held_on_the_kept_connection() -> bool:
        conn = daemon.poller.connection
        return (
            bool(answered)
            and conn._active is not None
            and conn._active is conn._conn
            and time.monotonic() - answered[-1] > RESEND_WITHIN + 0.5
        )

    try:
        assert wait_until(held_on_the_kept_connection, 30, interval=0.05), caplog.text
        plane.server.proc.send_signal(signal.SIGKILL)
        plane.server.proc.wait(30)
        assert wait_until(lambda: "control plane unreachable" in caplog.text, 30), caplog.text
        assert "closed a kept connection before answering" in caplog.text, caplog.text
        _restart(plane)
        after = lambda: caplog.text.split("control plane unreachable", 1)[1]  # noqa: E731
        assert wait_until(lambda: "connected to" in after(), 60), caplog.text
    finally:
        daemon.shutdown(threads, grace=1.0)
        for t in threads:  # the idle heartbeat thread looks at stop every 30 s: not waited for
            if t.name == "nymph-poll":
                t.join(15)
    assert REFUSED not in caplog.text, caplog.text
    assert "unexpected error" not in caplog.text, caplog.text
