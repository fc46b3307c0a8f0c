"""``GET /metrics`` on a real ``lakeshore serve`` (each backend): refused without a
token and for namespace and daemon tokens, answered for an admin token and a
``metrics`` token (which opens nothing else), and served without a token on the
probe port; after a heartbeat, a long-poll and a few requests the expected series
are there, and no label value is an id or a raw path."""

from __future__ import annotations

import re
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from dreamlake.controlplane.client import Client
from dreamlake.controlplane.server.access import scopes
from dreamlake.controlplane.server.metrics.registry import REFUSAL_REASONS, refusal_reason
from lakeshore_fixtures import ServerProc, free_port, wait_until
from prometheus_client.parser import text_string_to_metric_families

Samples = list[tuple[str, dict[str, str], float]]


def _get(url: str, token: str | None = None) -> tuple[int, str, str]:
    req = urllib.request.Request(url)
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("Content-Type", ""), err.read().decode()


def _scrape(server: ServerProc, token: str | None = None) -> Samples:
    status, kind, text = _get(server.url + "/metrics", token or server.admin_token)
    assert status == 200, text
    assert kind.startswith("text/plain")
    return [
        (s.name, dict(s.labels), s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
    ]


def _value(samples: Samples, name: str, **labels: str) -> float | None:
    for n, got, value in samples:
        if n == name and all(got.get(k) == v for k, v in labels.items()):
            return value
    return None


@pytest.fixture(scope="module")
def ns(server: ServerProc) -> tuple[str, str]:
    """A namespace of this module's own and its token."""
    name = "metrics-" + uuid.uuid4().hex[:6]
    server.admin.create_namespace(name)
    return name, server.admin.create_token(name)


def test_metrics_needs_an_admin_or_a_metrics_token(server: ServerProc, ns: tuple[str, str]) -> None:
    name, token = ns
    status, kind, body = _get(server.url + "/metrics")
    assert status == 401 and "lakeshore_" not in body
    assert _get(server.url + "/metrics", "not-a-token")[0] == 401
    assert _get(server.url + "/metrics", token)[0] == 403
    daemon = server.admin.create_token(name, scope="daemon", provider="box")
    assert _get(server.url + "/metrics", daemon)[0] == 403
    assert _get(server.url + "/metrics", server.admin_token)[0] == 200

    metrics = server.admin.create_token(name, label="prometheus", scope="metrics")
    status, kind, body = _get(server.url + "/metrics", metrics)
    assert status == 200 and kind.startswith("text/plain; version=")
    assert "# TYPE lakeshore_http_request_duration_seconds histogram" in body
    # a metrics token opens nothing else
    assert _get(server.url + "/api/namespaces", metrics)[0] == 403
    assert _get(server.url + f"/api/namespaces/{name}/providers", metrics)[0] == 403
    assert _get(server.url + "/api/whoami", metrics)[0] == 200


def test_refusals_are_counted_by_reason(server: ServerProc) -> None:
    before = _scrape(server)
    _get(server.url + "/api/namespaces")
    _get(server.url + "/api/namespaces", "no-such-token")
    after = _scrape(server)
    for reason in ("missing", "unknown"):
        name = "lakeshore_token_refusals_total"
        assert (_value(after, name, reason=reason) or 0) >= (
            _value(before, name, reason=reason) or 0
        ) + 1
    assert {r for n, labels, _ in after if n == name for r in [labels["reason"]]} == set(
        REFUSAL_REASONS
    )


def test_a_heartbeat_a_poll_and_a_request_show(server: ServerProc, ns: tuple[str, str]) -> None:
    name, token = ns
    client = Client(server.url, token, namespace=name)
    before = _scrape(server)
    worker = client.register("gpu-box", "i-" + uuid.uuid4().hex[:8], host="h1")["workerId"]
    for _ in range(3):
        client.heartbeat(worker)
    client.submit_work("idle-box", "true", queue="batch")

    after = _scrape(server)
    beats = _value(after, "lakeshore_heartbeats_received_total") or 0
    assert beats >= (_value(before, "lakeshore_heartbeats_received_total") or 0) + 3
    assert _value(after, "lakeshore_workers", namespace=name, provider="gpu-box", state="live") == 1
    assert _value(after, "lakeshore_workers", namespace=name, provider="gpu-box", state="gone") == 0
    assert _value(after, "lakeshore_queue_depth", namespace=name, queue="batch") == 1
    age = _value(after, "lakeshore_queue_oldest_age_seconds", namespace=name, queue="batch")
    assert age is not None and 0 <= age < 60
    assert _value(after, "lakeshore_work_items", namespace=name, state="queued") == 1
    route = "/api/namespaces/{ns}/workers"
    count = _value(
        after,
        "lakeshore_http_request_duration_seconds_count",
        method="POST",
        route=route,
        status="2xx",
    )
    assert count is not None and count >= 1
    assert _value(after, "lakeshore_metrics_database_up") == 1
    size = _value(after, "lakeshore_database_pool_size") or 0
    in_use = _value(after, "lakeshore_database_pool_connections", state="in_use")
    assert size >= 1 and in_use is not None and 0 <= in_use <= size
    # the lag probe samples every half second from the server's start: wait for one
    assert wait_until(
        lambda: (_value(_scrape(server), "lakeshore_event_loop_lag_seconds_count") or 0) >= 1,
        timeout=15,
    )

    # a long-poll held by the hot path shows while it is held; work for it ends it
    held: list[Any] = []
    poll = threading.Thread(target=lambda: held.append(client.poll_work(worker, wait=50.0)))
    poll.start()
    try:
        assert wait_until(
            lambda: (_value(_scrape(server), "lakeshore_long_polls_held") or 0) >= 1, 30.0
        )
    finally:
        woken = client.submit_work("gpu-box", "true")
        poll.join(60)
    assert held and held[0] is not None and held[0]["id"] == woken["id"]
    assert _value(_scrape(server), "lakeshore_long_polls_held") == 0


UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
HEXISH = re.compile(r"[0-9a-f]{16,}")


def test_no_label_value_is_an_id_or_a_raw_path(server: ServerProc, ns: tuple[str, str]) -> None:
    name, token = ns
    client = Client(server.url, token, namespace=name)
    worker = client.register("labels-box", "i-" + uuid.uuid4().hex)["workerId"]
    client.heartbeat(worker)
    raw = [
        f"/api/namespaces/{name}/workers/{worker}",
        f"/api/namespaces/{name}/work/{uuid.uuid4()}",
        f"/nowhere/{uuid.uuid4().hex}",
        f"/api/namespaces/{name}/providers/{uuid.uuid4().hex}",
    ]
    for path in raw:
        _get(server.url + path, token)
        _get(server.url + path)
    templates = {t for _, t in scopes.ROUTES} | {"unmatched"}
    samples = _scrape(server)
    seen_routes = set()
    for metric, labels, _ in samples:
        for key, value in labels.items():
            assert not UUID.search(value), (metric, key, value)
            assert not HEXISH.search(value), (metric, key, value)
            assert worker not in value
            if key == "route":
                seen_routes.add(value)
                assert value in templates, (metric, value)
            elif key != "le":
                assert "/" not in value, (metric, key, value)
    assert "unmatched" in seen_routes
    assert "/api/namespaces/{ns}/work/{work_id}" in seen_routes


@pytest.fixture(scope="module")
def probed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProc, int]]:
    """A server with a probe port and a budget of one connection, and its probe port:
    for the probe port's metrics and for shedding (which leaves it as it found it)."""
    probe = free_port()
    s = ServerProc(
        data_dir=tmp_path_factory.mktemp("probed"),
        port=free_port(),
        extra=["--probe-port", str(probe)],
        env={"LAKESHORE_MAX_CONNECTIONS": "1"},
    ).start()
    try:
        yield s, probe
    finally:
        s.stop()


def test_the_probe_port_serves_metrics_without_a_token(probed: tuple[ServerProc, int]) -> None:
    s, probe = probed
    status, kind, body = _get(f"http://127.0.0.1:{probe}/metrics")
    assert status == 200 and kind.startswith("text/plain")
    assert "lakeshore_heartbeats_received_total" in body
    assert _get(s.url + "/metrics")[0] == 401  # the main port still asks for a token


@pytest.mark.parametrize(
    ("status", "detail", "reason"),
    [
        (401, "missing bearer token (Authorization: Bearer <token>)", "missing"),
        (401, "unknown or revoked token", "unknown"),
        (401, "this token has expired; mint a new one", "expired"),
        (403, "this needs an admin token", "forbidden"),
        (404, "no namespace named 'x'", "namespace"),
        (429, "slow down", "other"),
    ],
)
def test_refusal_reasons_are_a_fixed_set(status: int, detail: str, reason: str) -> None:
    assert refusal_reason(status, detail) == reason
    assert reason in REFUSAL_REASONS


def test_the_metrics_scope() -> None:
    assert scopes.ROUTES[("GET", "/metrics")] == "metrics"
    assert scopes.refusal("metrics", scope="metrics", own=True, sibling=False) is None
    assert scopes.refusal("metrics", scope="admin", own=True, sibling=False) is None
    for other in ("namespace", "daemon"):
        assert scopes.refusal("metrics", scope=other, own=True, sibling=False) is not None
    for need in ("worker", "read", "write", "admin"):
        assert scopes.refusal(need, scope="metrics", own=True, sibling=False) is not None
    assert scopes.refusal("caller", scope="metrics", own=True, sibling=False) is None


def test_lakeshore_tokens_create_metrics(server: ServerProc, ns: tuple[str, str]) -> None:
    import subprocess

    from lakeshore_fixtures import clean_env, lakeshore_argv

    name, _ = ns
    common = ["--server", server.url, "--data-dir", str(server.data_dir)]

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*lakeshore_argv(), "tokens", "create", "--namespace", name, *args, *common],
            capture_output=True,
            text=True,
            env=clean_env(),
            stdin=subprocess.DEVNULL,
            timeout=60,
        )

    out = run("--metrics", "--label", "prometheus")
    assert out.returncode == 0, out.stderr
    token = out.stdout.strip()
    assert _get(server.url + "/metrics", token)[0] == 200
    assert _get(server.url + f"/api/namespaces/{name}", token)[0] == 403
    both = run("--metrics", "--daemon-for", "box")
    assert both.returncode != 0 and "--metrics" in both.stderr


def test_the_docs_table_names_every_metric(server: ServerProc) -> None:
    from pathlib import Path

    doc = Path(__file__).parents[2] / "docs" / "metrics.md"
    documented = {
        m.group(1): m.group(2)
        for m in re.finditer(r"^\| `(lakeshore_[a-z_]+)` \| (\w+) \|", doc.read_text(), re.M)
    }
    text = _get(server.url + "/metrics", server.admin_token)[2]
    exported = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
    assert documented == exported


def test_the_grafana_dashboard_reads_documented_metrics() -> None:
    import json
    from pathlib import Path

    docs = Path(__file__).parents[2] / "docs"
    table = set(
        re.findall(r"^\| `(lakeshore_[a-z_]+)` \|", (docs / "metrics.md").read_text(), re.M)
    )
    dash = json.loads((docs / "grafana-lakeshore.json").read_text())
    used: set[str] = set()
    for panel in dash["panels"]:
        for target in panel["targets"]:
            for name in re.findall(r"lakeshore_[a-z_]+", target["expr"]):
                used.add(re.sub(r"_(bucket|count|sum)$", "", name))
    assert used <= table, used - table
    assert used == table  # every metric has a panel
    assert len({p["id"] for p in dash["panels"]}) == len(dash["panels"])


def test_launches_are_counted_by_launcher_and_outcome(
    server: ServerProc, ns: tuple[str, str]
) -> None:
    """A capacity refusal (an SSH pool with no room), another refusal (a direct
    launch with no command) and a launcher that failed (nothing listens on the
    host's port), each counted under its outcome."""
    name, token = ns
    client = Client(server.url, token, namespace=name)
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    )
    secret = {"name": "pool-key", "kind": "ssh_key", "value": key.decode()}
    client.request("POST", f"/api/namespaces/{name}/secrets", secret)
    kwargs = {
        "hosts": ["127.0.0.1"],
        "port": free_port(),  # nothing listens there
        "user": "nobody",
        "private_key": {"$secret": "pool-key"},
    }
    client.create_provider_row({"name": "pool", "launcher": "SSH", "kwargs": kwargs})
    path = f"/api/namespaces/{name}/launch"

    def outcome(body: dict[str, Any]) -> int:
        try:
            client.request("POST", path, {"provider": "pool", **body})
        except Exception as exc:
            return int(getattr(exc, "status", 0))
        return 201

    before = _scrape(server)
    assert 400 <= outcome({"count": 2, "command": "true"}) < 500  # room for one host
    assert 400 <= outcome({}) < 500  # a direct launch needs a command
    assert outcome({"command": "true"}) >= 500  # the host does not answer
    after = _scrape(server)
    name_ = "lakeshore_launches_total"
    for want in ("capacity", "refused", "failed"):
        was = _value(before, name_, launcher="SSH", outcome=want) or 0
        assert _value(after, name_, launcher="SSH", outcome=want) == was + 1, want


def test_a_launch_tally() -> None:
    from types import SimpleNamespace

    from dreamlake.controlplane.launch.orders import LaunchError
    from dreamlake.controlplane.server.metrics.registry import (
        LAUNCH_OUTCOMES,
        LaunchTally,
        ServerMetrics,
        launch_outcome,
    )

    assert launch_outcome(None) == "launched"
    assert launch_outcome(LaunchError(422, "launch_rejected", "InsufficientInstanceCapacity")) == (
        "capacity"
    )
    assert launch_outcome(LaunchError(409, "limit_reached", "at its instance limit")) == "capacity"
    assert launch_outcome(LaunchError(422, "validation_error", "bad")) == "refused"
    assert launch_outcome(LaunchError(502, "launch_failed", "boom")) == "failed"
    assert launch_outcome(RuntimeError("boom")) == "failed"
    metrics = ServerMetrics()
    state = SimpleNamespace(metrics=metrics)
    tally = LaunchTally(state)
    tally.ended(None)  # no launcher named yet (an unknown provider): not counted
    tally.launcher = "EC2"
    tally.ended(None)
    replay = LaunchTally(state)
    replay.launcher, replay.replayed = "EC2", True
    replay.ended(None)  # a retry answered from its first result: not counted again
    assert (
        metrics.registry.get_sample_value(
            "lakeshore_launches_total", {"launcher": "EC2", "outcome": "launched"}
        )
        == 1
    )
    assert set(LAUNCH_OUTCOMES) == {"launched", "capacity", "refused", "failed"}


def test_shed_503s_are_counted_by_reason(probed: tuple[ServerProc, int]) -> None:
    """Beyond the connection budget (one connection, two held open): a 503, counted;
    scraped from the probe port, which is never shed."""
    import socket

    s, probe = probed
    held = [socket.create_connection(("127.0.0.1", s.port)) for _ in range(2)]
    try:
        assert wait_until(lambda: _get(s.url + "/api/whoami", s.admin_token)[0] == 503, 10)
    finally:
        for sock in held:
            sock.close()
    _, _, text = _get(f"http://127.0.0.1:{probe}/metrics")
    samples = [
        (x.name, dict(x.labels), x.value)
        for family in text_string_to_metric_families(text)
        for x in family.samples
    ]
    assert (_value(samples, "lakeshore_shed_total", reason="connections") or 0) >= 1
    for reason in ("in_flight", "queue_time", "draining"):
        assert _value(samples, "lakeshore_shed_total", reason=reason) is not None


def test_pool_wait_is_observed(server: ServerProc, ns: tuple[str, str]) -> None:
    name, token = ns
    Client(server.url, token, namespace=name).workers()  # a route that reads the database
    samples = _scrape(server)
    count = _value(samples, "lakeshore_database_pool_wait_seconds_count")
    assert count is not None and count >= 1
    assert (_value(samples, "lakeshore_database_pool_wait_seconds_sum") or 0) >= 0


def test_pool_wait_survives_a_dispose(tmp_path: Any) -> None:
    from dreamlake.controlplane.db import make_engine
    from dreamlake.controlplane.server.metrics.poolwait import time_checkouts
    from dreamlake.controlplane.server.metrics.registry import ServerMetrics
    from sqlalchemy import text

    metrics = ServerMetrics()
    engine = make_engine(f"sqlite:///{tmp_path / 'db.sqlite'}")
    time_checkouts(engine, metrics.pool_wait)
    for _ in range(2):
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        engine.dispose()
    got = metrics.registry.get_sample_value("lakeshore_database_pool_wait_seconds_count")
    assert got == 2


def test_the_certificate_refusal_hook() -> None:
    """``certificate_refused(state, reason)``: what the TLS identity code calls where it
    refuses a client certificate; a reason outside the set counts as other."""
    from types import SimpleNamespace

    from dreamlake.controlplane.server.metrics.registry import (
        CERTIFICATE_REASONS,
        ServerMetrics,
        certificate_refused,
    )

    metrics = ServerMetrics()
    state = SimpleNamespace(metrics=metrics)
    certificate_refused(state, "revoked")
    certificate_refused(SimpleNamespace(state=state), "expired")  # the app itself
    certificate_refused(state, "made-up")
    certificate_refused(SimpleNamespace(), "revoked")  # no metrics: nothing, no error

    def value(reason: str) -> float | None:
        return metrics.registry.get_sample_value(
            "lakeshore_certificate_refusals_total", {"reason": reason}
        )

    assert (value("revoked"), value("expired"), value("other")) == (1, 1, 1)
    assert value("untrusted") == 0 and "mismatch" in CERTIFICATE_REASONS
