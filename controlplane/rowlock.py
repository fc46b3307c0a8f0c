"""Read-modify-write of one row without losing a write acknowledged meanwhile.

:func:`lock_row` takes the row for the rest of the transaction and reads it again:
PostgreSQL's ``SELECT ... FOR UPDATE``; on SQLite, whose locks are the database's,
the write lock itself (``BEGIN IMMEDIATE``, waiting up to the busy timeout), so the
row read after it is the last committed one and no other writer commits before this
transaction ends. A change computed from that read (a kwargs patch merged onto the
stored kwargs) never overwrites another that was answered 200.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session
from sqlalchemy.orm.exc import ObjectDeletedError


def begin_write(session: Session) -> None:
    """Start this session's transaction as a writer: on SQLite ``BEGIN IMMEDIATE``
    unless a transaction is already open (which, in the driver's default mode, only a
    write opens: it holds the lock already); on PostgreSQL nothing (rows are locked
    one by one)."""
    conn = session.connection()
    if conn.dialect.name != "sqlite":
        return
    raw = conn.connection.dbapi_connection
    if raw is not None and not raw.in_transaction:
        raw.execute("BEGIN IMMEDIATE")


def lock_row(session: Session, row: Any) -> bool:
    """Lock ``row`` for this transaction and reload it; False when it was deleted
    meanwhile (the caller answers 404 or 409)."""
    begin_write(session)
    try:
        if session.connection().dialect.name == "sqlite":
            session.refresh(row)
        else:
            session.refresh(row, with_for_update=True)
    except ObjectDeletedError:
        return False
    return True
