"""Control-plane fixtures: a real ``lakeshore serve`` subprocess on 127.0.0.1 (random
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
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from dreamlake.controlplane.client import Client

LIVE_SECONDS = 2.0
PG_USER = "dreamlake-pg"
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def lakeshore_argv() -> list[str]:
    exe = BIN / "lakeshore"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "dreamlake.cli.lakeshore"]


def nymph_argv() -> list[str]:
    exe = BIN / "nymph"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "dreamlake.controlplane.nymph.main"]


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
        import psycopg2

        self.counter += 1
        name = f"lakeshore_{self.counter}_{secrets.token_hex(3)}"
        conn = psycopg2.connect(host="127.0.0.1", port=self.port, user="postgres", dbname="postgres")
        try:
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute(f'CREATE DATABASE "{name}"')
        finally:
            conn.close()
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"


@pytest.fixture(scope="session")
def postgres() -> Iterator[PgCluster]:
    initdb, pg_ctl = _pg_binary("initdb"), _pg_binary("pg_ctl")
    if not initdb or not pg_ctl:
        pytest.skip("needs PostgreSQL server binaries (initdb, pg_ctl) on PATH")
    try:
        import psycopg2  # noqa: F401
    except ImportError:
        pytest.skip("needs psycopg2-binary (the dev extra)")
    base = Path(tempfile.mkdtemp(prefix="dreamlake-pg-"))
    runas: list[str] = []
    if os.geteuid() == 0:
        # PostgreSQL refuses to run as root: use an unprivileged system user.
        try:
            pw = pwd.getpwnam(PG_USER)
        except KeyError:
            made = subprocess.run(
                ["useradd", "-r", "-M", "-s", "/usr/sbin/nologin", PG_USER],
                capture_output=True,
                text=True,
            )
            if made.returncode != 0 and "already exists" not in made.stderr:
                shutil.rmtree(base, ignore_errors=True)
                pytest.skip(f"needs an unprivileged user for PostgreSQL: useradd failed: {made.stderr.strip()}")
            pw = pwd.getpwnam(PG_USER)
        if not shutil.which("runuser"):
            shutil.rmtree(base, ignore_errors=True)
            pytest.skip("needs runuser to start PostgreSQL as an unprivileged user")
        os.chown(base, pw.pw_uid, pw.pw_gid)
        runas = ["runuser", "-u", PG_USER, "--"]
    base.chmod(0o700)
    data = base / "data"
    init = subprocess.run(
        [*runas, initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "-N"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    if init.returncode != 0:
        shutil.rmtree(base, ignore_errors=True)
        pytest.skip(f"needs a working initdb: {init.stderr.strip()[-400:]}")
    port = free_port()
    opts = f"-p {port} -h 127.0.0.1 -k {base} -F -c max_connections=200"
    start = subprocess.run(
        [*runas, pg_ctl, "-D", str(data), "-l", str(base / "log"), "-w", "-t", "60", "-o", opts, "start"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    if start.returncode != 0:
        log = (base / "log").read_text(errors="replace")[-600:] if (base / "log").exists() else ""
        shutil.rmtree(base, ignore_errors=True)
        pytest.skip(f"needs PostgreSQL to start: {start.stderr.strip()} {log}")
    try:
        yield PgCluster(port=port, base=base)
    finally:
        subprocess.run(
            [*runas, pg_ctl, "-D", str(data), "-m", "immediate", "stop"],
            capture_output=True,
            stdin=subprocess.DEVNULL,
        )
        shutil.rmtree(base, ignore_errors=True)


# -- lakeshore servers -------------------------------------------------------------


@dataclass
class ServerProc:
    data_dir: Path
    port: int
    db_url: str | None = None
    live_seconds: float = LIVE_SECONDS
    extra: list[str] = field(default_factory=list)
    proc: subprocess.Popen[bytes] | None = None

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

    def start(self, timeout: float = 60.0) -> ServerProc:
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
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=clean_env()
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


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def lakeshore_backend(request: pytest.FixtureRequest) -> str:
    if request.param == "postgres":
        request.applymarker(pytest.mark.needs_postgres)
    return str(request.param)


@pytest.fixture(scope="module")
def db_url(lakeshore_backend: str, request: pytest.FixtureRequest) -> str | None:
    if lakeshore_backend == "sqlite":
        return None
    cluster: PgCluster = request.getfixturevalue("postgres")
    return cluster.new_database()


@pytest.fixture(scope="module")
def server(db_url: str | None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProc]:
    s = ServerProc(data_dir=tmp_path_factory.mktemp("lakeshore"), port=free_port(), db_url=db_url)
    s.start()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[Callable[..., ServerProc]]:
    started: list[ServerProc] = []

    def _start(
        data_dir: Path | None = None,
        port: int | None = None,
        db_url: str | None = None,
        live_seconds: float = LIVE_SECONDS,
        extra: list[str] | None = None,
    ) -> ServerProc:
        s = ServerProc(
            data_dir=data_dir or tmp_path / f"lakeshore-{len(started)}",
            port=port or free_port(),
            db_url=db_url,
            live_seconds=live_seconds,
            extra=list(extra or []),
        )
        started.append(s)
        return s.start()

    yield _start
    for s in started:
        s.kill()


@pytest.fixture
def fresh_namespace(server: ServerProc) -> tuple[str, Client]:
    """A new namespace on the module's server and a client holding its own token."""
    name = f"ns-{secrets.token_hex(4)}"
    server.admin.create_namespace(name)
    token = server.admin.create_token(name)
    return name, server.client(token, namespace=name)
