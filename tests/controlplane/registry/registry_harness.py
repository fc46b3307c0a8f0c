"""A real ``lakeshore serve`` on 127.0.0.1 (SQLite, and PostgreSQL when its binaries
exist), namespaces isolated per test, and a record of every byte the suite saw
(response bodies, CLI output, server logs) for the secret-leak scan."""

from __future__ import annotations

import itertools
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

BIN = Path(sys.executable).parent
LAKESHORE = str(BIN / "lakeshore")

# Every secret plaintext the suite stores. The leak scan looks for each of these.
PLAINTEXTS = {
    "aws": "AKIAREGISTRYTEST01:wJalrXUtnFEMI/K7MDENG/bPxRfiCYsecretZZ",
    "aws_id": "AKIAREGISTRYTEST01",
    "aws_secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYsecretZZ",
    "token": "tok-plaintext-7f3a9c2e-do-not-leak",
    "ssh": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAAleakcheck\n-----END OPENSSH PRIVATE KEY-----",
    "ssh_body": "b3BlbnNzaC1rZXktdjEAAAAAleakcheck",
}

SEEN: list[tuple[str, str]] = []
"""(where, text) for everything the registry tests received: scanned at the end."""

SERVERS: list[Server] = []


def record(where: str, text: str) -> None:
    SEEN.append((where, text))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    url: str
    data_dir: Path
    log: Path
    db: str
    proc: subprocess.Popen[bytes]
    admin_token: str = ""
    _ns: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def client(self, token: str | None = None) -> Api:
        return Api(self.url, token or self.admin_token)

    def namespace(self, org: str | bool | None = True) -> str:
        """A fresh namespace. ``org=True`` gives it an org of its own (isolated
        listings), a string names a shared org, ``None`` means no org."""
        name = f"t{os.getpid() % 10000}-{next(self._ns)}"
        body: dict[str, Any] = {"name": name}
        if org is True:
            body["orgId"] = f"org-{name}"
        elif isinstance(org, str):
            body["orgId"] = org
        r = self.client().post("/api/namespaces", json=body)
        assert r.status_code == 201, r.text
        return name

    def token_for(self, namespace: str) -> str:
        r = self.client().post(f"/api/namespaces/{namespace}/tokens", json={"label": "test"})
        assert r.status_code == 201, r.text
        return str(r.json()["token"])

    def env(self, namespace: str | None = None, token: str | None = None) -> dict[str, str]:
        env = dict(os.environ)
        env["LAKESHORE_URL"] = self.url
        env.pop("LAKESHORE_TOKEN_FILE", None)
        env["LAKESHORE_TOKEN"] = token or self.admin_token
        if namespace:
            env["LAKESHORE_NAMESPACE"] = namespace
        env["NO_COLOR"] = "1"
        env["COLUMNS"] = "200"
        return env

    def cli(
        self,
        *args: str,
        namespace: str | None = None,
        token: str | None = None,
        stdin: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [LAKESHORE, *args],
            env=self.env(namespace, token),
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
        record(f"cli {' '.join(args)} stdout", proc.stdout)
        record(f"cli {' '.join(args)} stderr", proc.stderr)
        return proc


class Api:
    """httpx against the server, with the namespace path built in and every body recorded."""

    def __init__(self, url: str, token: str) -> None:
        self._c = httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30, trust_env=False
        )

    def request(self, method: str, path: str, **kw: Any) -> httpx.Response:
        r = self._c.request(method, path, **kw)
        record(f"{method} {path} -> {r.status_code}", r.text)
        return r

    def get(self, path: str, **kw: Any) -> httpx.Response:
        return self.request("GET", path, **kw)

    def post(self, path: str, **kw: Any) -> httpx.Response:
        return self.request("POST", path, **kw)

    def patch(self, path: str, **kw: Any) -> httpx.Response:
        return self.request("PATCH", path, **kw)

    def put(self, path: str, **kw: Any) -> httpx.Response:
        return self.request("PUT", path, **kw)

    def delete(self, path: str, **kw: Any) -> httpx.Response:
        return self.request("DELETE", path, **kw)


def _start(tmp: Path, db_url: str | None, label: str) -> Server:
    data = tmp / "data"
    data.mkdir(parents=True)
    log = tmp / "server.log"
    port = free_port()
    argv = [LAKESHORE, "serve", "--port", str(port), "--data-dir", str(data), "--log-level", "info"]
    if db_url:
        argv += ["--db", db_url]
    env = dict(os.environ)
    env.pop("LAKESHORE_SECRET_KEY", None)
    env.pop("LAKESHORE_DB", None)
    with log.open("wb") as fh:
        proc = subprocess.Popen(
            argv, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"lakeshore serve exited: {log.read_text()}")
        try:
            if httpx.get(url + "/healthz", timeout=1, trust_env=False).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    else:
        proc.terminate()
        raise RuntimeError(f"lakeshore serve did not answer: {log.read_text()}")
    server = Server(url=url, data_dir=data, log=log, db=label, proc=proc)
    server.admin_token = (data / "admin.token").read_text().strip()
    SERVERS.append(server)
    return server


def _stop(server: Server) -> None:
    server.proc.terminate()
    try:
        server.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.proc.kill()
        server.proc.wait()
    record(f"server log ({server.db})", server.log.read_text(errors="replace"))


# --- PostgreSQL --------------------------------------------------------------


SHARED: dict[str, Server] = {}
"""The folder's servers, one per database: started by the first module that asks
and kept for the modules after it (every test works in namespaces of its own,
``Server.namespace``). The leak scan stops them (``stop_shared``) before it reads
their logs, so it sees each log whole."""


def shared(label: str, request: pytest.FixtureRequest) -> Server:
    s = SHARED.get(label)
    if s is None or s.proc.poll() is not None:
        db_url = None
        if label == "postgres":
            # the session's throwaway cluster, from tests/controlplane/conftest.py
            db_url = request.getfixturevalue("postgres").new_database()
        tmp = request.getfixturevalue("tmp_path_factory").mktemp(f"lakeshore-{label}")
        s = SHARED[label] = _start(tmp, db_url, label)
    return s


def stop_shared() -> None:
    """Stop the folder's servers (each log recorded for the scan)."""
    for s in SHARED.values():
        if s.proc.poll() is None:
            _stop(s)
    SHARED.clear()


@pytest.fixture(scope="session")
def registry_servers() -> Iterator[dict[str, Server]]:
    yield SHARED
    stop_shared()


@pytest.fixture(
    scope="module",
    params=[
        "sqlite",
        pytest.param("postgres", marks=[pytest.mark.needs_postgres, pytest.mark.slow]),
    ],
)
def server(request: pytest.FixtureRequest, registry_servers: dict[str, Server]) -> Server:
    """A real ``lakeshore serve`` subprocess per database, shared by the folder's modules."""
    return shared(str(request.param), request)


@pytest.fixture(scope="module")
def sqlite_server(request: pytest.FixtureRequest, registry_servers: dict[str, Server]) -> Server:
    """SQLite only: for CLI journeys where a second database adds time but no coverage
    (the folder's SQLite server)."""
    return shared("sqlite", request)


def dump(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True)
