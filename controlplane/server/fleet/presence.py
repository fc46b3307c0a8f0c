"""Which servers hold a database: each running ``lakeshore serve`` keeps a row
``server:<id>`` in ``server_meta`` (host, pid, url, when last seen), refreshed every
:data:`REFRESH_SECONDS` and removed as it stops. A row not refreshed for
:data:`STALE_SECONDS` is a server that died (``kill -9``): it holds nothing.

``lakeshore keys rotate`` refuses while any server holds the database (naming it):
a server keeps its key in memory, and a secret it wrote after the rotation would be
encrypted with the old key, unreadable once it restarts. The order that makes this
safe, on both backends:

* a server announces itself (committed) *before* it checks its key against the
  database's key check, and reads that check ``FOR SHARE``;
* the rotation first locks the key check row (an ``UPDATE``: a row lock on
  PostgreSQL, the write lock on SQLite), then looks for servers, re-encrypts and
  commits.

A server that announced before the lock is seen, and the rotation is refused; one
that announces after it reads the check only once the rotation has committed, finds
the new check, and refuses to start with its old key.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session, sessionmaker

from ...db import utcnow
from ...models import ServerMeta

PREFIX = "server:"
REFRESH_SECONDS = 10.0
STALE_SECONDS = 3 * REFRESH_SECONDS


@dataclass(frozen=True)
class Holder:
    key: str
    host: str
    pid: int
    url: str
    seen_seconds_ago: float

    def describe(self) -> str:
        where = f" (data dir {self.url})" if self.url else ""
        return (
            f"a server on {self.host} (pid {self.pid}){where}, seen "
            f"{self.seen_seconds_ago:.0f} s ago"
        )


def announce(make_session: sessionmaker[Session], url: str = "") -> str:
    """Write this process's row (committed); returns its key."""
    key = f"{PREFIX}{uuid.uuid4().hex}"
    doc = {"host": socket.gethostname(), "pid": os.getpid(), "url": url}
    with make_session() as session, session.begin():
        session.add(ServerMeta(key=key, value=json.dumps({**doc, "seen": _now()})))
    return key


def withdraw(make_session: sessionmaker[Session], key: str) -> None:
    try:
        with make_session() as session, session.begin():
            session.execute(delete(ServerMeta).where(ServerMeta.key == key))
    except Exception:  # the database is gone: the row goes stale on its own
        pass


def _now() -> str:
    return utcnow().isoformat()


def refresh(make_session: sessionmaker[Session], key: str) -> None:
    with make_session() as session, session.begin():
        row = session.get(ServerMeta, key)
        doc = json.loads(row.value) if row is not None else {}
        doc.update(seen=_now(), host=socket.gethostname(), pid=os.getpid())
        if row is None:
            session.add(ServerMeta(key=key, value=json.dumps(doc)))
        else:
            row.value = json.dumps(doc)


def holders(session: Session) -> list[Holder]:
    """The servers that hold the database now (rows seen within STALE_SECONDS)."""
    now = utcnow()
    out: list[Holder] = []
    rows = session.scalars(select(ServerMeta).where(ServerMeta.key.startswith(PREFIX)))
    for row in rows:
        try:
            doc: dict[str, Any] = json.loads(row.value)
            seen = datetime.fromisoformat(str(doc["seen"]))
        except (ValueError, KeyError, TypeError):
            continue
        ago = (now - seen).total_seconds()
        if ago <= STALE_SECONDS:
            out.append(
                Holder(
                    row.key,
                    str(doc.get("host", "?")),
                    int(doc.get("pid", 0)),
                    str(doc.get("url", "")),
                    max(0.0, ago),
                )
            )
    return out


class Presence:
    """This server's row, refreshed on a thread of its own while it runs."""

    def __init__(self, make_session: sessionmaker[Session], key: str) -> None:
        self.make_session = make_session
        self.key = key
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="presence", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(REFRESH_SECONDS):
            try:
                refresh(self.make_session, self.key)
            except Exception:  # a database blip: the next round tries again
                continue

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        withdraw(self.make_session, self.key)
