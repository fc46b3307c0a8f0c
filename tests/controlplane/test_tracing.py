"""OpenTelemetry traces across a command and the control plane, with an in-process
span exporter (the SDK's in-memory one, set as the tracer provider, so nothing is
exported anywhere): a ``lakeshore`` command run in process against a real
``lakeshore serve`` app (uvicorn on 127.0.0.1, in a thread) is one trace holding the
command's span and the server's; so is a request ``status`` makes
(``engine/settings/http_json.py``) inside a ``dreamlake`` command's span; each
request a real daemon loop makes (``nymph/tracing.py``) is a client span whose child
is the server's span; and without ``OTEL_EXPORTER_OTLP_ENDPOINT`` nothing of
OpenTelemetry is imported, by the commands or by the daemon."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dreamlake.engine.settings import tracing

pytest.importorskip("opentelemetry.sdk", reason="needs the otel extra (opentelemetry-sdk)")


@pytest.fixture(scope="module")
def exporter() -> Any:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = trace.get_tracer_provider()
    if not hasattr(provider, "add_span_processor"):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    provider.add_span_processor(SimpleSpanProcessor(memory))  # type: ignore[attr-defined]
    return memory


@pytest.fixture
def traced(exporter: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    # configured as a user configures it; the test's provider is kept, so the
    # endpoint (nothing listens there) is never asked
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setattr(tracing, "_state", {})
    exporter.clear()
    return exporter


@pytest.fixture
def served(traced: Any, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    import uvicorn
    from dreamlake.controlplane.server.app import create_app
    from dreamlake.controlplane.server.settings import Settings

    app = create_app(Settings.from_env(data_dir=tmp_path / "data"))
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", access_log=False)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", tmp_path / "data" / "admin.token"
    finally:
        server.should_exit = True
        thread.join(10)


_EXPORTER: list[Any] = []


@pytest.fixture(autouse=True)
def _remember(exporter: Any) -> None:
    _EXPORTER[:] = [exporter]


def served_spans() -> Any:
    """Every span finished so far in this test."""
    from opentelemetry import trace

    trace.get_tracer_provider().force_flush()  # type: ignore[attr-defined]
    return _EXPORTER[0].get_finished_spans()


def _one_trace(spans: Any, client_name: str, server_name: str) -> None:
    by_name = {s.name: s for s in spans}
    assert client_name in by_name and server_name in by_name, sorted(by_name)
    command, request = by_name[client_name], by_name[server_name]
    assert request.context.trace_id == command.context.trace_id
    assert request.parent is not None and request.parent.span_id == command.context.span_id
    assert request.kind.name == "SERVER"
    assert request.attributes["http.route"] == server_name.split(" ", 1)[1]
    assert request.attributes["http.response.status_code"] == 200


def test_a_lakeshore_command_and_its_request_are_one_trace(
    served: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from dreamlake.cli.lakeshore import app as lakeshore

    url, token_file = served
    argv = ["lakeshore", "namespaces", "list", "--server", url, "--token-file", str(token_file)]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as done:
        lakeshore.main()
    assert done.value.code in (None, 0)
    _one_trace(served_spans(), "lakeshore namespaces list", "GET /api/namespaces")
    from dreamlake.controlplane.client import HEADER_HOOKS

    assert tracing.inject in HEADER_HOOKS  # how the client carries the command's trace


def test_a_dreamlake_command_carries_its_trace_to_the_server(served: tuple[str, Path]) -> None:
    from dreamlake.engine.settings.http_json import request_json

    url, token_file = served
    headers = {"Authorization": f"Bearer {token_file.read_text().strip()}"}
    with tracing.span(tracing.command_name("dreamlake", ["provider", "status", "-n", "x"])):
        status, _ = request_json(url + "/api/whoami", headers, timeout=10, loopback=True)
    assert status == 200
    _one_trace(served_spans(), "dreamlake provider status", "GET /api/whoami")


def test_the_dreamlake_entry_point_emits_its_commands_span(
    traced: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from dreamlake.cli.entry import main

    main(["provider", "status", "-n", "nothing-here", "--dream-dir", str(tmp_path), "--json"])
    names = [s.name for s in served_spans()]
    assert "dreamlake provider status" in names


def test_command_names_carry_no_values() -> None:
    assert tracing.command_name("dreamlake", ["provider", "connect", "gpu"]) == (
        "dreamlake provider connect"
    )
    assert tracing.command_name("lakeshore", ["--json"]) == "lakeshore"


def test_unconfigured_nothing_is_imported(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    code = (
        "import sys; from dreamlake.cli.entry import main; "
        f"main(['provider', 'status', '-n', 'x', '--dream-dir', {str(tmp_path)!r}, '--json']); "
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stderr
    env["OTEL_SDK_DISABLED"] = "true"
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://127.0.0.1:9"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stderr


# -- the daemon -------------------------------------------------------------------------


def _daemon_trace_pairs(spans: Any) -> dict[str, list[tuple[Any, Any]]]:
    """Each daemon request's client span with the server's span for it, by name."""
    servers = {s.parent.span_id: s for s in spans if s.kind.name == "SERVER" and s.parent}
    pairs: dict[str, list[tuple[Any, Any]]] = {}
    for c in spans:
        if c.kind.name == "CLIENT" and c.context.span_id in servers:
            pairs.setdefault(c.name, []).append((c, servers[c.context.span_id]))
    return pairs


@pytest.fixture
def daemon_traced(traced: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The daemon's tracing installed as ``nymph`` installs it, undone afterwards."""
    from dreamlake.controlplane import client
    from dreamlake.controlplane.nymph import tracing as nymph_tracing

    monkeypatch.setattr(client, "REQUEST_SPAN", None)
    monkeypatch.setattr(client, "HEADER_HOOKS", [])
    assert nymph_tracing.install()
    assert isinstance(client.REQUEST_SPAN, nymph_tracing.RequestSpans)
    assert list(client.HEADER_HOOKS) == [tracing.inject]
    return traced


def test_the_daemons_requests_and_the_servers_spans_are_one_trace_each(
    served: tuple[str, Path], daemon_traced: Any, tmp_path: Path
) -> None:
    """A real daemon loop (asking for a certificate, register, the long-poll,
    heartbeats while a command runs, its result, deregister) against the served app:
    each request is a CLIENT span named by its route template, and the server's span
    for it is its child."""
    from dreamlake.controlplane.client import Client
    from dreamlake.controlplane.nymph.credentials import Credentials
    from dreamlake.controlplane.nymph.daemon import Daemon, DaemonConfig

    url, token_file = served
    token = token_file.read_text().strip()
    config = DaemonConfig(
        provider="traced",
        queues=[],
        instance_id="i-traced",
        host="h",
        version="test",
        poll_wait=2.0,
        heartbeat_seconds=0.2,
    )
    # a plain server signs no certificate (409): the daemon goes on with its token
    credentials = Credentials(tmp_path / "certs", "default", "traced", lambda: token)
    daemon = Daemon(Client(url, token, keep_alive=True), config, credentials=credentials)
    threads = daemon.start()
    try:
        admin = Client(url, token)
        deadline = time.monotonic() + 30
        while daemon.worker_id is None:
            assert time.monotonic() < deadline, "the daemon did not register"
            time.sleep(0.05)
        item = admin.submit_work("traced", "sleep 0.8")
        assert admin.get_work(item["id"], wait=30)["state"] == "succeeded"
    finally:
        daemon.shutdown(threads)
    ns = "/api/namespaces/{ns}/workers"
    pairs = _daemon_trace_pairs(served_spans())
    status = "http.response.status_code"
    for name in (
        f"POST {ns}",
        f"GET {ns}/{{worker_id}}/work",
        f"POST {ns}/{{worker_id}}/heartbeat",
        f"POST {ns}/{{worker_id}}/work/{{work_id}}/result",
        f"DELETE {ns}/{{worker_id}}",
    ):
        assert name in pairs, (name, sorted(pairs))
        for client_span, server_span in pairs[name]:
            assert server_span.context.trace_id == client_span.context.trace_id
            assert client_span.parent is None  # each request is a trace of its own
            assert server_span.name == name  # the same route template on both sides
            assert client_span.attributes["url.template"] == name.split(" ", 1)[1]
        # answered (a poll cut short by the stop may have no status on one side)
        answered = [(c.attributes.get(status), s.attributes.get(status)) for c, s in pairs[name]]
        assert any(mine == theirs and 200 <= mine < 300 for mine, theirs in answered), answered
    ((asked, signed),) = pairs["POST /api/namespaces/{ns}/daemon-certs"]
    assert asked.attributes[status] == signed.attributes[status] == 409
    assert asked.attributes["error.type"] == "409" and asked.status.status_code.name == "ERROR"


def test_a_daemon_request_with_no_answer_is_an_error_span(daemon_traced: Any) -> None:
    from dreamlake.controlplane.client import Client, Unreachable
    from lakeshore_fixtures import free_port

    with pytest.raises(Unreachable):
        Client(f"http://127.0.0.1:{free_port()}", "t").heartbeat("w-1")
    (span,) = [s for s in served_spans() if s.kind.name == "CLIENT"]
    assert span.name == "POST /api/namespaces/{ns}/workers/{worker_id}/heartbeat"
    assert span.attributes["error.type"] == "Unreachable"
    assert span.status.status_code.name == "ERROR"


@pytest.mark.parametrize(
    ("path", "template"),
    [
        ("/api/namespaces/default/workers", "/api/namespaces/{ns}/workers"),
        (
            "/api/namespaces/workers/workers/work/work?wait=20.0",
            "/api/namespaces/{ns}/workers/{worker_id}/work",
        ),
        (
            "/api/namespaces/a/workers/w/work/i-1/result",
            "/api/namespaces/{ns}/workers/{worker_id}/work/{work_id}/result",
        ),
        ("/api/namespaces/a/daemon-certs", "/api/namespaces/{ns}/daemon-certs"),
        ("/healthz", "/healthz"),
    ],
)
def test_a_daemon_span_names_the_route_never_an_id(path: str, template: str) -> None:
    from dreamlake.controlplane.nymph.tracing import route

    assert route(path) == template


def test_unconfigured_the_daemon_imports_nothing_of_opentelemetry() -> None:
    """A real ``nymph`` main in a fresh interpreter, stopped once it has tried its
    (unreachable) server: nothing of OpenTelemetry loaded, with no endpoint and with
    one set but the SDK disabled. Its zipapp may name OpenTelemetry only as optional."""
    from dreamlake.engine.daemon import build
    from lakeshore_fixtures import free_port

    code = (
        "import logging, os, signal, sys\n"
        "class Stop(logging.Handler):\n"
        "    def emit(self, record):\n"
        "        if 'unreachable' in record.getMessage():\n"
        "            os.kill(os.getpid(), signal.SIGTERM)\n"
        "logging.getLogger('nymph').addHandler(Stop())\n"
        "from dreamlake.controlplane.nymph.main import main\n"
        f"code = main(['--server', 'http://127.0.0.1:{free_port()}', '--provider', 'p'])\n"
        "print(code, 'dreamlake.controlplane.nymph.tracing' in sys.modules,\n"
        "      sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "LAKESHORE_"))}
    env["LAKESHORE_TOKEN"] = "t"
    for extra in ({}, {"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "x"}):
        out = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env={**env, **extra},
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert out.stdout.strip().splitlines()[-1] == "0 True []", out.stderr
    modules = build.module_closure()
    assert {"dreamlake.controlplane.nymph.tracing", "dreamlake.engine.settings.tracing"} <= {
        m.name for m in modules
    }
    assert build.external_imports(modules) == {}
    assert set(build.OPTIONAL) == {"opentelemetry"}


def test_the_daemons_zipapp_exports_its_spans_over_otlp(tmp_path: Path) -> None:
    """``nymph.pyz`` run as a host runs it (``python3 -I``) by a Python that has the
    SDK, with ``OTEL_EXPORTER_OTLP_ENDPOINT`` pointing at a listener standing in for a
    collector: its (unanswered) register is exported over OTLP/HTTP when it stops."""
    import http.server
    import signal

    from dreamlake.engine.daemon import build
    from lakeshore_fixtures import free_port, wait_until

    posted: list[tuple[str, bytes]] = []

    class Collector(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            size = int(self.headers.get("Content-Length") or 0)
            posted.append((self.path, self.rfile.read(size)))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    collector = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    app = tmp_path / build.APP_NAME
    app.write_bytes(build.build())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "LAKESHORE_"))}
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{collector.server_address[1]}"
    env["LAKESHORE_TOKEN"] = "t"
    log = tmp_path / "nymph.log"
    try:
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-I", str(app), "--server", f"http://127.0.0.1:{free_port()}",
                 "--provider", "p"],
                env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
            )  # fmt: skip
        try:
            assert wait_until(lambda: "unreachable" in log.read_text(), 60), log.read_text()
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=60) == 0, log.read_text()
    finally:
        collector.shutdown()
    assert "(tracing its requests)" in log.read_text()
    assert posted and {path for path, _ in posted} == {"/v1/traces"}
    assert any(b"POST /api/namespaces/{ns}/workers" in body for _, body in posted)
