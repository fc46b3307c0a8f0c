"""Launch-test helpers (importable by name): an AWS API on 127.0.0.1 (moto's server, one per
module), and an in-process control plane (the real app over SQLite in a temp dir)
whose EC2 launcher talks to it through the engine's endpoint settings."""

from __future__ import annotations

import contextlib
import hashlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aws_api import MOTO_SERVER, start_moto, stop
from aws_api import ec2 as ec2  # re-exported: the launch tests take it from here

BIN = Path(sys.executable).parent
P = "/api/namespaces/default"
AMI = "ami-760aaa0f"  # an image moto serves in every region
AWS_ID = "AKIALAUNCHTESTID0001"
AWS_SECRET = "launch-test-secret-key/abcdefghijklmnop"


@pytest.fixture(scope="module")
def aws_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not MOTO_SERVER.is_file():
        pytest.skip(f"needs moto's server at {MOTO_SERVER} (pip install 'moto[server]')")
    pytest.importorskip("boto3", reason="needs boto3 (the aws extra)")
    proc, url = start_moto(tmp_path_factory.mktemp("moto") / "moto.log")
    try:
        yield url
    finally:
        stop(proc)


def bundle_double(folder: Path) -> tuple[str, Path]:
    """A stand-in daemon bundle (a TEST DOUBLE: a small tar, not the real wheels), so
    the fast tests do not build wheels; the journey test uses the real bundle."""
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        data = b"not a wheel"
        info = tarfile.TarInfo("placeholder.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    raw = buf.getvalue()
    sha = hashlib.sha256(raw).hexdigest()
    path = folder / f"{sha}.tar"
    path.write_bytes(raw)
    return sha, path


@pytest.fixture
def app_client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    from dreamlake.controlplane.server.app import create_app
    from dreamlake.controlplane.server.settings import Settings
    from fastapi.testclient import TestClient

    monkeypatch.delenv("LAKESHORE_SECRET_KEY", raising=False)
    monkeypatch.delenv("LAKESHORE_PUBLIC_URL", raising=False)
    monkeypatch.setenv("LAKESHORE_QUEUE_TICK", "0.3")
    app = create_app(Settings(data_dir=tmp_path / "data", live_seconds=3.0))
    app.state.daemon_bundle = bundle_double(tmp_path)
    app.state.token_cache.ttl = 0.0  # a revoked token bites at once (the default: seconds)
    token = (tmp_path / "data" / "admin.token").read_text().strip()
    with TestClient(
        app, base_url="http://127.0.0.1:7878", headers={"Authorization": f"Bearer {token}"}
    ) as client:
        yield client, app
    app.state.engine.dispose()


def ok(r: Any, status: int = 200) -> Any:
    assert r.status_code == status, r.text
    return r.json()


# -- a recording HTTP double (for APIs that cannot run here) -------------------------


class RecordingApiDouble:
    """A TEST DOUBLE of a cloud HTTP API on 127.0.0.1: it records every request
    (method, path, query, headers, JSON body) and answers from ``handler``, a function
    ``(method, path, query, body) -> (status, json)``. It stands in for the GCE API
    and a Kubernetes apiserver, which cannot run on this machine."""

    def __init__(self, handler: Any) -> None:
        import http.server
        import threading
        import urllib.parse

        self.requests: list[dict[str, Any]] = []
        double = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _serve(self) -> None:
                import json

                split = urllib.parse.urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                ctype = self.headers.get("Content-Type") or ""
                body: Any = raw.decode() if raw else None
                if raw and "x-www-form-urlencoded" in ctype:
                    body = dict(urllib.parse.parse_qsl(raw.decode()))
                elif raw:
                    with contextlib.suppress(ValueError):
                        body = json.loads(raw)
                query = dict(urllib.parse.parse_qsl(split.query))
                double.requests.append(
                    {
                        "method": self.command,
                        "path": split.path,
                        "query": query,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "body": body,
                    }
                )
                try:
                    status, payload = handler(self.command, split.path, query, body)
                except Exception as exc:  # a broken double must say so, not hang up
                    status, payload = 500, {"doubleError": f"{type(exc).__name__}: {exc}"}
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = _serve

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def of(self, method: str, prefix: str = "") -> list[dict[str, Any]]:
        return [r for r in self.requests if r["method"] == method and r["path"].startswith(prefix)]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
