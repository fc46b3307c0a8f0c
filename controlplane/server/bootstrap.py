"""First start: the default namespace and an admin token written to a 0600 file."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from ..models import Namespace, Token
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


def bootstrap(settings: Settings, make_session: sessionmaker[Session]) -> Path:
    """Create the default namespace; keep a valid admin token file or write a new
    one. Returns the admin token file's path."""
    path = settings.admin_token_file
    with make_session() as session, session.begin():
        ensure_namespace(session, settings.default_namespace)
        current = path.read_text(encoding="utf-8").strip() if path.is_file() else ""
        if current:
            row = session.scalar(select(Token).where(Token.token_hash == hash_token(current)))
            if row is not None and row.admin and row.revoked_at is None:
                if path.stat().st_mode & 0o077:
                    path.chmod(0o600)
                return path
        token = new_token()
        session.add(Token(token_hash=hash_token(token), admin=True, label="bootstrap admin"))
    write_secret_file(path, token + "\n")
    return path
