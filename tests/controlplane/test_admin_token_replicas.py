"""Replicas over one database share one admin token: the server that initialises
the database mints it, and a replica started with a fresh data dir mints none (no
silent extra admin credential) but says where the token is; two first starts at
once mint one. Real ``lakeshore serve`` processes over one SQLite file, and over
one PostgreSQL database."""

from __future__ import annotations

import concurrent.futures
import shutil
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lakeshore_fixtures import ServerProc, clean_env, lakeshore_argv

pytestmark = pytest.mark.slow


def _both(start_server: Callable[..., ServerProc], tmp: Path, db: str) -> list[ServerProc]:
    """Two servers over ``db`` started at once, each with a data dir of its own."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        started = [pool.submit(start_server, data_dir=tmp / name, db_url=db) for name in ("a", "b")]
        return [f.result() for f in started]


def _one_admin_token(servers: list[ServerProc]) -> tuple[ServerProc, ServerProc]:
    """The one that minted the token and the one that did not, checked."""
    holders = [s for s in servers if (s.data_dir / "admin.token").is_file()]
    assert len(holders) == 1, [s.log_tail() for s in servers]
    (minter,) = holders
    (other,) = [s for s in servers if s is not minter]
    admins = [t for t in minter.admin.request("GET", "/api/tokens") if t["scope"] == "admin"]
    assert len(admins) == 1, admins
    where = str(minter.data_dir / "admin.token")
    assert admins[0]["label"].startswith("bootstrap admin (") and where in admins[0]["label"]
    # the replica says there is none here, where it is and what to do
    log = (other.data_dir / "server.log").read_text()
    assert "admin token: none here" in log
    assert (
        f"admin token: none written to {other.data_dir / 'admin.token'}: this database has "
        f"its admin token already (kept at {socket.gethostname()}:{where} by the server "
        f"that minted it); copy that file to {other.data_dir / 'admin.token'} (mode 0600) "
        "to use the lakeshore CLI on this machine"
    ) in log  # as docs/controlplane.md quotes it
    # the database's admin token works on the replica too
    assert other.client(minter.admin_token).whoami()["admin"] is True
    return minter, other


def test_replicas_over_one_sqlite_file_share_one_admin_token(
    start_server: Callable[..., ServerProc], tmp_path: Path
) -> None:
    db = f"sqlite:///{tmp_path / 'shared.db'}"
    minter, other = _one_admin_token(_both(start_server, tmp_path, db))
    # the copy the replica asked for: the lakeshore CLI on its data dir then works
    shutil.copy(minter.data_dir / "admin.token", other.data_dir / "admin.token")
    (other.data_dir / "admin.token").chmod(0o600)
    out = subprocess.run(
        [*lakeshore_argv(), "tokens", "list", "--server", other.url,
         "--data-dir", str(other.data_dir), "--json"],
        env=clean_env(), capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    # restarted with the copy, the replica keeps it and mints nothing
    other.stop()
    again = start_server(data_dir=other.data_dir, db_url=db)
    assert again.admin_token == minter.admin_token
    admins = [t for t in minter.admin.request("GET", "/api/tokens") if t["scope"] == "admin"]
    assert len(admins) == 1, admins


@pytest.mark.needs_postgres
def test_replicas_over_one_postgres_database_share_one_admin_token(
    start_server: Callable[..., ServerProc], tmp_path: Path, postgres: Any
) -> None:
    _one_admin_token(_both(start_server, tmp_path, postgres.new_database()))
