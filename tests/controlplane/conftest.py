"""Control-plane fixtures: a real ``lakeshore serve`` subprocess on 127.0.0.1 (random
free port, its own data dir) over SQLite, and the same over a throwaway PostgreSQL
cluster when the server binaries exist. Helpers live in ``lakeshore_fixtures``.

    lakeshore_backend    "sqlite" or "postgres" (module-parametrized; postgres skips
                         with a reason when it cannot run)
    server               a running server for the module (live bound 2 s, or the
                         module's SERVER_LIVE_SECONDS):
                         .url, .admin_token, .data_dir, .admin (a Client), .client(token, ns);
                         shared by the modules that set SHARES_SERVER = True
    shared_server_sqlite / shared_server_postgres
                         the session's default server of each backend (one per
                         worker): for tests that only read it or keep to their own
                         namespace, tokens and names
    start_server(...)    start another one (restart tests), killed at teardown
    postgres             the session's PostgreSQL cluster (.new_database() -> URL)
    fresh_namespace      (name, Client with that namespace's own token)
    slurm_cluster        the session's real single-node SLURM cluster (.login: its sshd)
"""

from __future__ import annotations

import fcntl
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# The helpers sit beside this file; make them importable whatever the import mode.
if str(Path(__file__).parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).parent))

from dreamlake.controlplane.client import Client
from lakeshore_fixtures import (
    LIVE_SECONDS,
    PG_USER,
    NymphProc,
    PgCluster,
    ServerProc,
    _pg_binary,
    free_port,
    nymph_argv,
)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """One real single-node SLURM cluster (and its login node's sshd) per session,
    for the launch and the capacity tests alike."""
    launch = str(Path(__file__).parent / "launch")
    if launch not in sys.path:
        sys.path.insert(0, launch)
    from slurm_cluster import slurm_skip_reason, start_cluster

    why = slurm_skip_reason()
    if why:
        pytest.skip(why)
    cluster = start_cluster(tmp_path_factory.mktemp("slurm"))
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def postgres() -> Iterator[PgCluster]:
    initdb, pg_ctl = _pg_binary("initdb"), _pg_binary("pg_ctl")
    if not initdb or not pg_ctl:
        pytest.skip("needs PostgreSQL server binaries (initdb, pg_ctl) on PATH")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("needs psycopg (the postgres extra)")
    base = Path(tempfile.mkdtemp(prefix="dreamlake-pg-"))
    runas: list[str] = []
    if os.geteuid() == 0:
        # PostgreSQL refuses to run as root: use an unprivileged system user.
        # Test workers start their clusters side by side: one useradd at a time, or
        # the second finds /etc/passwd locked.
        with open(Path(tempfile.gettempdir()) / "dreamlake-pg-user.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
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
                    pytest.skip(
                        "needs an unprivileged user for PostgreSQL: "
                        f"useradd failed: {made.stderr.strip()}"
                    )
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
        [
            *runas,
            pg_ctl,
            "-D",
            str(data),
            "-l",
            str(base / "log"),
            "-w",
            "-t",
            "60",
            "-o",
            opts,
            "start",
        ],
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


def _serving(
    data: Path, db_url: str | None, live_seconds: float = LIVE_SECONDS
) -> Iterator[ServerProc]:
    """A server on a free port, running until the fixture that yields from this ends."""
    s = ServerProc(data_dir=data, port=free_port(), db_url=db_url, live_seconds=live_seconds)
    s.start()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture(scope="session")
def shared_server_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProc]:
    yield from _serving(tmp_path_factory.mktemp("lakeshore-shared"), None)


@pytest.fixture(scope="session")
def shared_server_postgres(
    postgres: PgCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProc]:
    yield from _serving(tmp_path_factory.mktemp("lakeshore-shared"), postgres.new_database())


@pytest.fixture(scope="module")
def server(
    lakeshore_backend: str,
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[ServerProc]:
    """The module's server. A module that sets ``SHARES_SERVER = True`` (its tests
    keep to namespaces, tokens and names of their own, and none needs an empty
    server or changes it for others) gets the session's server of its backend (one
    per worker) instead of starting two of its own. A module that sets
    ``SERVER_LIVE_SECONDS`` gets a server of its own with that live bound."""
    live_seconds = getattr(request.module, "SERVER_LIVE_SECONDS", LIVE_SECONDS)
    if getattr(request.module, "SHARES_SERVER", False):
        assert live_seconds == LIVE_SECONDS, "the shared servers have the default live bound"
        shared: ServerProc = request.getfixturevalue(f"shared_server_{lakeshore_backend}")
        assert shared.proc is not None and shared.proc.poll() is None, (
            f"the shared {lakeshore_backend} server has ended:\n{shared.log_tail()}"
        )
        yield shared
        return
    db_url = request.getfixturevalue("db_url")
    yield from _serving(tmp_path_factory.mktemp("lakeshore"), db_url, live_seconds)


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[Callable[..., ServerProc]]:
    started: list[ServerProc] = []

    def _start(
        data_dir: Path | None = None,
        port: int | None = None,
        db_url: str | None = None,
        live_seconds: float = LIVE_SECONDS,
        extra: list[str] | None = None,
        env: dict[str, str] | None = None,
    ) -> ServerProc:
        s = ServerProc(
            data_dir=data_dir or tmp_path / f"lakeshore-{len(started)}",
            port=port or free_port(),
            db_url=db_url,
            live_seconds=live_seconds,
            extra=list(extra or []),
            env=dict(env or {}),
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


@pytest.fixture
def start_nymph(tmp_path: Path) -> Iterator[Callable[..., NymphProc]]:
    """Start real nymph daemons: ``start_nymph(server_url, token, provider=..., ...)``."""
    started: list[NymphProc] = []

    def _start(
        server_url: str,
        token: str,
        *,
        provider: str,
        namespace: str = "default",
        queues: str = "gpu,cpu",
        instance_id: str | None = None,
        extra: list[str] | None = None,
    ) -> NymphProc:
        n = len(started)
        token_file = tmp_path / f"nymph-{n}.token"
        token_file.write_text(token + "\n")
        token_file.chmod(0o600)
        argv = [
            *nymph_argv(),
            "--server", server_url,
            "--token-file", str(token_file),
            "--namespace", namespace,
            "--provider", provider,
            "--queues", queues,
            "--instance-id", instance_id or f"nymph-{n}",
            "--poll-wait", "5",
            "--max-backoff", "1",
            *(extra or []),
        ]  # fmt: skip
        p = NymphProc(argv=argv, log_path=tmp_path / f"nymph-{n}.log").start()
        started.append(p)
        return p

    yield _start
    for p in started:
        p.kill9()


@pytest.fixture(params=["sqlite", "postgres"])
def migrated_engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A fresh, migrated database on each backend (no server): an SQLAlchemy engine."""
    from dreamlake.controlplane.db import make_engine, run_migrations

    if request.param == "postgres":
        url = request.getfixturevalue("postgres").new_database()
    else:
        url = f"sqlite:///{tmp_path / 'lakeshore.db'}"
    engine = make_engine(url)
    run_migrations(engine)
    yield engine
    engine.dispose()
