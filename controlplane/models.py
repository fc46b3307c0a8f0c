"""Core tables: namespaces, bearer tokens, workers (daemons claiming a provider)
and work items. Registry tables (providers, secrets, modes) live in
``controlplane/registry/models.py`` on the same :class:`~.db.Base`."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from .db import Base, UTCDateTime, utcnow


class Namespace(Base):
    __tablename__ = "namespaces"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(63), unique=True, nullable=False)
    org_id: Mapped[str | None] = mapped_column(String(128), index=True, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, nullable=False)


class Token(Base):
    """A bearer token. Only its SHA-256 is stored. ``scope`` says what it may do
    (see ``server/scopes.py``): ``admin`` reaches every namespace; ``namespace``
    works in its own namespace (and reads org siblings); ``daemon`` registers,
    heartbeats, polls and reports for ``provider_name`` only (and, once it has
    registered, for ``instance_id`` only when that is pinned). ``host`` is the
    daemon's install it was minted for: one live daemon token per (provider, host)."""

    __tablename__ = "tokens"
    # a provider's daemon tokens (of one host), looked up by every token minted for a
    # host (access/daemon_tokens.py): without it SQLite, which keeps no statistics,
    # reads every token of the namespace through ix_tokens_namespace_id
    __table_args__ = (
        Index("ix_tokens_namespace_provider_host", "namespace_id", "provider_name", "host"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    namespace_id: Mapped[int | None] = mapped_column(
        ForeignKey("namespaces.id", ondelete="CASCADE"), index=True, nullable=True
    )
    admin: Mapped[bool] = mapped_column(Boolean, default=False, nullable=False)
    label: Mapped[str | None] = mapped_column(String(200), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, nullable=False)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    scope: Mapped[str] = mapped_column(String(16), default="namespace", nullable=False)
    provider_name: Mapped[str | None] = mapped_column(String(63), index=True, nullable=True)
    instance_id: Mapped[str | None] = mapped_column(String(255), nullable=True)
    host: Mapped[str | None] = mapped_column(String(255), nullable=True)
    # a daemon certificate's row: the token it was first asked for with (see
    # server/identity/routes.py); revoking that token revokes it
    root_token_id: Mapped[int | None] = mapped_column(Integer, index=True, nullable=True)


class Worker(Base):
    """A daemon's claim on a provider. Live while its heartbeat is recent."""

    __tablename__ = "workers"
    __table_args__ = (UniqueConstraint("namespace_id", "provider_name", "instance_id"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    namespace_id: Mapped[int] = mapped_column(
        ForeignKey("namespaces.id", ondelete="CASCADE"), index=True, nullable=False
    )
    provider_name: Mapped[str] = mapped_column(String(63), index=True, nullable=False)
    instance_id: Mapped[str] = mapped_column(String(255), nullable=False)
    host: Mapped[str] = mapped_column(String(255), default="", nullable=False)
    queues: Mapped[list[Any]] = mapped_column(JSON, default=list, nullable=False)
    version: Mapped[str] = mapped_column(String(64), default="", nullable=False)
    # The provider identity the daemon was started for (provider.json ``id``); None
    # for a daemon older than identities, which counts by name (see store.claims).
    identity: Mapped[str | None] = mapped_column(String(64), nullable=True)
    registered_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, nullable=False)
    last_seen: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, nullable=False)
    polled_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    deregistered_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # The token the daemon registered with: an instance's own token ties the worker to
    # the instance row a launch recorded (see launch.tracking).
    token_id: Mapped[int | None] = mapped_column(
        ForeignKey("tokens.id", ondelete="SET NULL"), nullable=True
    )


class WorkItem(Base):
    """A shell command for a provider (optionally one queue), run by one worker."""

    __tablename__ = "work_items"
    # a provider's queued items, oldest first (what every poll claims from, store.py),
    # and a namespace's running ones (the queue loop's busy workers); a worker's items
    # (a re-registration's lost runs, the queue loop's idle check). Without them
    # SQLite, which keeps no statistics, reads every item of the namespace, or all
    __table_args__ = (
        Index("ix_work_items_by_state", "namespace_id", "state", "provider_name", "created_at"),
        Index("ix_work_items_worker", "worker_id", "state"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    namespace_id: Mapped[int] = mapped_column(
        ForeignKey("namespaces.id", ondelete="CASCADE"), index=True, nullable=False
    )
    provider_name: Mapped[str] = mapped_column(String(63), index=True, nullable=False)
    queue: Mapped[str | None] = mapped_column(String(63), nullable=True)
    command: Mapped[str] = mapped_column(Text, nullable=False)
    timeout_seconds: Mapped[float | None] = mapped_column(nullable=True)
    state: Mapped[str] = mapped_column(String(16), index=True, default="queued", nullable=False)
    worker_id: Mapped[str | None] = mapped_column(
        ForeignKey("workers.id", ondelete="SET NULL"), nullable=True
    )
    exit_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    output_tail: Mapped[str | None] = mapped_column(Text, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, nullable=False)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class ServerMeta(Base):
    """Facts every replica over one database shares (the key check, listing scope)."""

    __tablename__ = "server_meta"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text, nullable=False)
