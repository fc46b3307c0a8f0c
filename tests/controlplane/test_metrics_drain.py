"""The ``draining`` shed as it happens: a real ``lakeshore serve`` (with a probe port)
holds two daemons' long-polls (one through the fleet's hot path, one through the
route) and a slow request (its body still coming) when SIGTERM arrives. The listener
closes, so a new connection is refused (a daemon moves to its next server); each held
poll is answered 503 with a ``Retry-After`` in ``RETRY_RESTART``; while the slow
request keeps the server in its drain, ``/metrics`` on the probe port counts them as
``lakeshore_shed_total{reason="draining"}`` (the route's 503 also in the request
histogram, the hot path's not); the slow request is still answered, and the server
exits."""

from __future__ import annotations

import signal
import socket
import threading
from pathlib import Path
from typing import Any

import pytest
from dreamlake.controlplane.client import ApiFailure, Client
from dreamlake.controlplane.server.fleet.shedding import RETRY_RESTART
from lakeshore_fixtures import ServerProc, free_port, wait_until
from prometheus_client.parser import text_string_to_metric_families
from test_metrics import _get, _value


def _probe_samples(probe: int) -> list[tuple[str, dict[str, str], float]]:
    status, _, text = _get(f"http://127.0.0.1:{probe}/metrics")
    assert status == 200, text
    return [
        (s.name, dict(s.labels), s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
    ]


def _metric(probe: int, name: str, **labels: str) -> float:
    return _value(_probe_samples(probe), name, **labels) or 0.0


def test_a_shutdown_sheds_held_polls_and_counts_them_draining(tmp_path: Path) -> None:
    probe = free_port()
    s = ServerProc(data_dir=tmp_path / "data", port=free_port(), extra=["--probe-port", str(probe)])
    s.start()
    slow: socket.socket | None = None
    try:
        admin = s.admin
        hot = admin.register("drain", "i-hot")["workerId"]
        # a provider no poll has looked at yet: the route holds its first poll
        routed = admin.register("drain-route", "i-route")["workerId"]
        assert admin.poll_work(hot, wait=0) is None  # known empty: its next poll, the hot path

        answers: dict[str, Any] = {}

        def hold(worker: str) -> None:
            try:
                answers[worker] = Client(s.url, s.admin_token).poll_work(worker, wait=50)
            except Exception as exc:
                answers[worker] = exc

        polls = [threading.Thread(target=hold, args=(w,), daemon=True) for w in (hot, routed)]
        for t in polls:
            t.start()
        assert wait_until(lambda: _metric(probe, "lakeshore_long_polls_held") == 2, 60)
        assert _metric(probe, "lakeshore_shed_total", reason="draining") == 0

        # a request whose body has not all come: the server drains until it is answered
        before = _metric(probe, "lakeshore_http_requests_in_flight")
        body = b'{"name": "after-drain"}'
        slow = socket.create_connection(("127.0.0.1", s.port), timeout=60)
        slow.sendall(
            b"POST /api/namespaces HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + f"Authorization: Bearer {s.admin_token}\r\n".encode()
            + b"Content-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body[:5]
        )
        assert wait_until(
            lambda: _metric(probe, "lakeshore_http_requests_in_flight") == before + 1, 60
        )

        assert s.proc is not None
        s.proc.send_signal(signal.SIGTERM)
        for t in polls:
            t.join(60)
        for worker in (hot, routed):
            shed = answers[worker]
            assert isinstance(shed, ApiFailure), shed
            assert shed.status == 503 and shed.error == "unavailable", shed
            assert shed.retry_after is not None
            assert RETRY_RESTART[0] <= shed.retry_after <= RETRY_RESTART[1]

        # in the drain: no new connection is taken, and the probe port counts the shed
        assert s.proc.poll() is None, s.log_tail()
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", s.port), timeout=10).close()
        assert _metric(probe, "lakeshore_shed_total", reason="draining") == 2
        # the route's 503 is in the request histogram (5xx); the hot path's is not
        polls_5xx = _metric(
            probe,
            "lakeshore_http_request_duration_seconds_count",
            route="/api/namespaces/{ns}/workers/{worker_id}/work",
            status="5xx",
        )
        assert polls_5xx == 1
        for reason in ("connections", "in_flight", "queue_time"):
            assert _metric(probe, "lakeshore_shed_total", reason=reason) == 0

        # the slow request is answered as usual, on a connection closed after it
        slow.sendall(body[5:])
        answer = slow.recv(65536).decode("latin-1")
        assert answer.startswith("HTTP/1.1 201") or answer.startswith("HTTP/1.1 200"), answer
        assert "connection: close" in answer.lower()
        assert s.proc.wait(timeout=60) in (0, -signal.SIGTERM), s.log_tail()
    finally:
        if slow is not None:
            slow.close()
        s.kill()
