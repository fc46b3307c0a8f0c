"""Control-plane test helpers (imported by conftest.py and tests): a real ``lakeshore serve`` subprocess on 127.0.0.1 (random
free port, its own data dir) over SQLite, and the same over a throwaway PostgreSQL
cluster (initdb + pg_ctl into a temp dir, listening on 127.0.0.1) when the server
binaries exist.

    lakeshore_backend    "sqlite" or "postgres" (parametrized; postgres skips with a
                         reason when it cannot run)
    server               a running server for the module (live bound 2 s):
                         .url, .admin_token, .data_dir, .admin (a Client), .client(token, ns)
    start_server(...)    start another one (restart tests), stopped at teardown
    postgres             the session's PostgreSQL cluster (.new_database() -> URL)
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from dreamlake.controlplane.client import ApiFailure, Client

LIVE_SECONDS = 2.0
PG_USER = "dreamlake-pg"
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tcp_table() -> list[list[str]]:
    """The kernel's TCP sockets (/proc/net/tcp and tcp6), a row of fields each:
    [1] local address:port, [2] remote, [3] state (0A listening, 01 established),
    [9] inode, the ports in hex."""
    rows = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        rows += [line.split() for line in lines]
    return rows


def lakeshore_argv() -> list[str]:
    exe = BIN / "lakeshore"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "dreamlake.cli.lakeshore.app"]


def nymph_argv() -> list[str]:
    exe = BIN / "nymph"
    return (
        [str(exe)] if exe.exists() else [sys.executable, "-m", "dreamlake.controlplane.nymph.main"]
    )


def _shared_key() -> str:
    from cryptography.fernet import Fernet

    return Fernet.generate_key().decode()


SHARED_KEY = _shared_key()
"""The one secret key of every test server over PostgreSQL: servers over one
database must share it (a server with another key refuses to start)."""


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKESHORE_")}
    env.update(extra)
    return env


def wait_until(predicate: Callable[[], bool], timeout: float, interval: float = 0.1) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with contextlib.suppress(Exception):
            if predicate():
                return True
        time.sleep(interval)
    with contextlib.suppress(Exception):
        return predicate()
    return False


def refused_within(client: Client, seconds: float) -> bool:
    """Whether ``client``'s credential is refused (401) within ``seconds`` (asked
    at once, then every 0.1 s); any other refusal fails the test."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            client.whoami()
        except ApiFailure as exc:
            assert exc.status == 401
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)


# -- PostgreSQL -------------------------------------------------------------------


def _pg_binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for candidate in sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"), reverse=True):
        return str(candidate)
    return None


@dataclass
class PgCluster:
    port: int
    base: Path
    counter: int = 0

    def new_database(self) -> str:
        import psycopg

        self.counter += 1
        name = f"lakeshore_{self.counter}_{secrets.token_hex(3)}"
        conn = psycopg.connect(host="127.0.0.1", port=self.port, user="postgres", dbname="postgres")
        try:
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute(f'CREATE DATABASE "{name}"')
        finally:
            conn.close()
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"


# -- lakeshore servers -------------------------------------------------------------


@dataclass
class ServerProc:
    data_dir: Path
    port: int
    db_url: str | None = None
    live_seconds: float = LIVE_SECONDS
    extra: list[str] = field(default_factory=list)
    proc: subprocess.Popen[bytes] | None = None
    env: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def admin_token(self) -> str:
        return (self.data_dir / "admin.token").read_text().strip()

    @property
    def admin(self) -> Client:
        return Client(self.url, self.admin_token)

    def client(self, token: str | None = None, namespace: str = "default") -> Client:
        return Client(self.url, token, namespace=namespace)

    def start(self, timeout: float = 180.0) -> ServerProc:
        """Start it and wait for /healthz; the bound is for a machine busy with other
        work (a start costs a few seconds of CPU, many more of waiting for it)."""
        argv = [
            *lakeshore_argv(),
            "serve",
            "--port",
            str(self.port),
            "--data-dir",
            str(self.data_dir),
            "--live-seconds",
            str(self.live_seconds),
            *self.extra,
        ]
        if self.db_url:
            argv += ["--db", self.db_url]
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.data_dir / "server.log", "ab")  # noqa: SIM115
        env = clean_env(**self.env)
        if self.db_url and "LAKESHORE_SECRET_KEY" not in self.env:
            env["LAKESHORE_SECRET_KEY"] = SHARED_KEY
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env
        )
        log.close()

        def healthy() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(self.log_tail())
            with urllib.request.urlopen(self.url + "/healthz", timeout=2) as r:
                return bool(r.status == 200)

        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                if healthy():
                    return self
            except RuntimeError as exc:
                raise AssertionError(f"lakeshore exited during start:\n{exc}") from None
            except Exception:
                time.sleep(0.1)
        self.kill()
        raise AssertionError(f"lakeshore did not become healthy in {timeout}s:\n{self.log_tail()}")

    def log_tail(self) -> str:
        path = self.data_dir / "server.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@dataclass
class NymphProc:
    """A real ``nymph`` subprocess; its log goes to ``log_path``."""

    argv: list[str]
    log_path: Path
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> NymphProc:
        log = open(self.log_path, "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(
            self.argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=clean_env()
        )
        log.close()
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def terminate(self, timeout: float = 15.0) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=timeout)

    def kill9(self) -> None:
        if self.alive():
            assert self.proc is not None
            self.proc.kill()
            self.proc.wait()
