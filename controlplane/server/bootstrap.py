"""First start: the default namespace and the database's admin token, written to a
0600 file by the server that mints it (one per database, not one per replica)."""

from __future__ import annotations

import os
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Select, select, text
from sqlalchemy.orm import Session, sessionmaker

from ..db import utcnow
from ..models import Namespace, Token
from ..rowlock import begin_write
from .access.tokens import hash_token, new_token
from .settings import Settings


def write_secret_file(path: Path, text: str) -> None:
    """Atomically write ``text`` to ``path`` with mode 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def ensure_namespace(session: Session, name: str, org_id: str | None = None) -> Namespace:
    row = session.scalar(select(Namespace).where(Namespace.name == name))
    if row is None:
        row = Namespace(name=name, org_id=org_id)
        session.add(row)
        session.flush()
    return row


@dataclass(frozen=True)
class AdminToken:
    """Where this server keeps the database's admin token: ``path``, written when
    this server minted it or found it there valid; ``elsewhere`` (else None) when
    the database already had a live admin token of another server's and none was
    written here: the sentence saying so, and where to copy it from."""

    path: Path
    elsewhere: str | None = None


def bootstrap(settings: Settings, make_session: sessionmaker[Session]) -> AdminToken:
    """Create the default namespace; keep a valid admin token file, else mint the
    database's admin token and write it, once per database: a replica over a
    database whose live admin token another server minted into its data dir mints
    none (one admin credential per database, never one more per replica's data
    dir), and says where it is; a server whose own file was lost writes a new one.
    Starts that race are serialised (PostgreSQL: an advisory lock; SQLite: the
    write lock), so two first starts mint one token."""
    path = settings.admin_token_file
    with make_session() as session, session.begin():
        begin_write(session)
        if session.connection().dialect.name == "postgresql":
            session.execute(text("SELECT pg_advisory_xact_lock(7878002)"))
        ensure_namespace(session, settings.default_namespace)
        current = path.read_text(encoding="utf-8").strip() if path.is_file() else ""
        if current:
            row = session.scalar(select(Token).where(Token.token_hash == hash_token(current)))
            if row is not None and row.admin and row.revoked_at is None and _live(row):
                if path.stat().st_mode & 0o077:
                    path.chmod(0o600)
                return AdminToken(path)
        label = f"{_MINTED}{socket.gethostname()}:{path})"[:200]
        # live admin tokens another server minted into its own data dir; this
        # server's own (its file lost or overwritten since) and those made by
        # hand do not stop a mint, so a lost admin token file is replaced at the
        # next start, as a first start writes one
        held = [
            t
            for t in session.scalars(_admin_tokens())
            if _live(t) and (t.label or "").startswith(_MINTED) and t.label != label
        ]
        if held:
            return AdminToken(path, _elsewhere(path, held[0]))
        token = new_token()
        session.add(Token(token_hash=hash_token(token), admin=True, label=label))
    write_secret_file(path, token + "\n")
    return AdminToken(path)


def _admin_tokens() -> Select[Token]:
    return select(Token).where(Token.admin.is_(True), Token.revoked_at.is_(None)).order_by(Token.id)


def _live(row: Token) -> bool:
    return row.expires_at is None or row.expires_at > utcnow()


_MINTED = "bootstrap admin ("  # the label's start: "bootstrap admin (<host>:<file>)"


def _elsewhere(path: Path, row: Token) -> str:
    kept = f"kept at {(row.label or '')[len(_MINTED) :].removesuffix(')')} by the server that minted it"
    return (
        f"none written to {path}: this database has its admin token already ({kept}); "
        f"copy that file to {path} (mode 0600) to use the lakeshore CLI on this machine"
    )
