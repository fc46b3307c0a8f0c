"""Where the state lives: default, a local backend path, a workspace, a remote
backend; and reading remote state through `terraform state pull` from a real
HTTP backend on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from dreamlake.engine.backends.terraform import BACKEND, observe_state
from dreamlake.engine.backends.terraform.location import state_location


def _tf(tmp_path: Path) -> Path:
    tf = tmp_path / "p" / "terraform"
    tf.mkdir(parents=True)
    return tf


def test_default_and_declared(tmp_path: Path) -> None:
    tf = _tf(tmp_path)
    assert state_location(tf).path == tf / "terraform.tfstate" and state_location(tf).remote is None
    (tf / "backend.tf").write_text('terraform {\n  backend "s3" {}\n}\n')
    assert state_location(tf).remote == "s3"
    (tf / "backend.tf").write_text('terraform {\n  cloud {\n    organization = "o"\n  }\n}\n')
    assert state_location(tf).remote == "cloud"


def test_initialised_local_path_and_workspace(tmp_path: Path) -> None:
    tf = _tf(tmp_path)
    (tf / ".terraform").mkdir()
    (tf / ".terraform/terraform.tfstate").write_text(
        json.dumps(
            {"version": 3, "backend": {"type": "local", "config": {"path": "state/x.tfstate"}}}
        )
    )
    assert state_location(tf).path == tf / "state/x.tfstate"
    (tf / ".terraform/environment").write_text("blue")
    loc = state_location(tf)
    assert loc.workspace == "blue" and loc.path == tf / "terraform.tfstate.d/blue/terraform.tfstate"


class _StateStore(BaseHTTPRequestHandler):
    """terraform's `http` backend protocol: GET returns the state (404: none), POST stores it."""

    state: bytes | None = None

    def do_GET(self) -> None:
        body = type(self).state
        if body is None:
            self.send_response(404)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        type(self).state = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def http_backend() -> Iterator[str]:
    handler = type("Store", (_StateStore,), {"state": None})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/state"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow
def test_remote_state_is_pulled(terraform_binary: str, tmp_path: Path, http_backend: str) -> None:
    tf = _tf(tmp_path)
    (tf / "main.tf").write_text(
        f'terraform {{\n  backend "http" {{\n    address = "{http_backend}"\n  }}\n}}\n\n'
        'output "greeting" {\n  value = "hello"\n}\n'
    )
    pdir = tf.parent
    before = observe_state(pdir)
    assert not before.present and any("run plan once" in n for n in before.notes)

    assert BACKEND.plan(pdir).result == "ok"
    assert BACKEND.observe_state(pdir).plan_fresh
    assert BACKEND.apply(pdir).result == "applied"
    assert not (tf / "terraform.tfstate").exists()  # the state went to the server

    s = observe_state(pdir)
    assert s.present and s.outputs == {"greeting": "hello"} and s.lock is None


def test_the_tf_files_are_the_globs(tmp_path: Path) -> None:
    """The configuration's ``*.tf`` files, listed without compiling the glob's pattern:
    what ``sorted(tf_dir.glob("*.tf"))`` finds, hidden names and folders included."""
    from dreamlake.engine.backends.terraform.location import _tf_files

    for name in ("main.tf", "b.tf", ".hidden.tf", ".tf", "x.tf.json", "y.TF", "vars.tfvars"):
        (tmp_path / name).write_text("")
    (tmp_path / "mod.tf").mkdir()
    assert _tf_files(tmp_path) == sorted(tmp_path.glob("*.tf"))
    assert _tf_files(tmp_path / "missing") == sorted((tmp_path / "missing").glob("*.tf")) == []
    assert _tf_files(tmp_path / "main.tf") == []  # not a folder
