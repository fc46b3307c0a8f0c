"""OpenTelemetry traces across a command and the control plane, with an in-process
span exporter (the SDK's in-memory one, set as the tracer provider, so nothing is
exported anywhere): a ``lakeshore`` command run in process against a real
``lakeshore serve`` app (uvicorn on 127.0.0.1, in a thread) is one trace holding the
command's span and the server's; so is a request ``status`` makes
(``engine/settings/http_json.py``) inside a ``dreamlake`` command's span; and
without ``OTEL_EXPORTER_OTLP_ENDPOINT`` nothing of OpenTelemetry is imported."""

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
