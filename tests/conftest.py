"""Shared fixtures. Every test runs with no control plane configured unless it starts
one: LAKESHORE_URL points at a closed port so no test reaches a stray server, and
LAKESHORE_DATA_DIR at an empty folder so no admin token of this machine is found."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent


def pytest_configure(config: pytest.Config) -> None:
    """A Ctrl-C reaches the tests that send one whatever started the suite: a shell
    starts a background job (``cmd &``, ``nohup``) with SIGINT ignored, which its
    children inherit, and an ignored SIGINT can be neither trapped by a shell nor
    turned into ``KeyboardInterrupt`` by Python. Python's own handler is put back
    (each child then starts with the default)."""
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """How ``scripts/test`` spreads the suite over its workers (pytest-xdist,
    ``--dist loadgroup``): a test file runs whole on one worker, so its module
    fixtures start once, and the registry folder runs together, since its last
    file scans everything the others wrote for secret plaintext. The files of the
    journeys against the AWS API (minutes each, mostly waiting on the provider)
    are handed out first, so no worker is left finishing one alone."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return  # one process: nothing to spread
    for item in items:
        rel = item.path.resolve().relative_to(TESTS)
        group = (
            "controlplane/registry" if rel.parts[:2] == ("controlplane", "registry") else str(rel)
        )
        item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=lambda item: item.get_closest_marker("needs_aws_mirror") is None)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(autouse=True)
def _isolated_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    monkeypatch.setenv("LAKESHORE_URL", f"http://127.0.0.1:{_closed_port()}")
    monkeypatch.delenv("LAKESHORE_TOKEN", raising=False)
    monkeypatch.delenv("LAKESHORE_TOKEN_FILE", raising=False)
    monkeypatch.delenv("DREAMRC", raising=False)
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(k, raising=False)
    home = tmp_path_factory.mktemp("home")
    # The admin token a real `lakeshore serve` left in the user data dir must not
    # configure a test's control plane.
    monkeypatch.setenv("LAKESHORE_DATA_DIR", str(home / "lakeshore-data"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(home / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(home / "aws-credentials"))
    yield


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty project folder to run verbs in (pass it as cwd or --dream-dir)."""
    p = tmp_path / "proj"
    p.mkdir()
    return p


@pytest.fixture
def own_templates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user template folder (DREAMLAKE_TEMPLATE_PATH) with a vendor `bare` that has
    no decisions, so create goes straight to `scaffolded`."""
    base = tmp_path / "own-templates"
    t = base / "bare"
    (t / "terraform").mkdir(parents=True)
    (t / "TEMPLATE.json").write_text(
        json.dumps(
            {
                "vendor": "bare",
                "version": 2,
                "kind": "test",
                "backends": ["terraform"],
                "files": ["terraform/*.tf"],
                "decisions": [],
            }
        )
    )
    (t / "terraform" / "main.tf").write_text('output "worker_host" {\n  value = "localhost"\n}\n')
    (t / "terraform" / "terraform.tfvars").write_text("# nothing to decide\n")
    (t / "ADAPT.md").write_text("# bare\nNothing to adapt.\n")
    monkeypatch.setenv("DREAMLAKE_TEMPLATE_PATH", str(base))
    return base
