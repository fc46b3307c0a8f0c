"""Tables of server-side launching: launch requests (one per client token, so a
retried request launches once), the instances this control plane launched, the
queues that grow their own workers, what their reconcile loop decided, and the
lease that keeps one loop running per database."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from ..db import Base, UTCDateTime, utcnow


class LaunchRequest(Base):
    """One ``POST …/launch``: its client token, and once done its scrubbed answer."""

    __tablename__ = "launch_requests"
    __table_args__ = (
        UniqueConstraint("namespace_id", "client_token", name="uq_launch_requests_token"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    namespace_id: Mapped[int] = mapped_column(
        ForeignKey("namespaces.id", ondelete="CASCADE"), index=True, nullable=False
    )
    client_token: Mapped[str] = mapped_column(String(64), nullable=False)
    provider_name: Mapped[str] = mapped_column(String(255), nullable=False)
    launcher: Mapped[str] = mapped_column(String(63), nullable=False)
    state: Mapped[str] = mapped_column(String(16), default="pending", nullable=False)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(
        UTCDateTime(), default=utcnow, onupdate=utcnow, nullable=False
    )


class Instance(Base):
    """Something a launcher started: an EC2/GCE instance, a Pod or Job, a SLURM job,
    a daemon or a command on an SSH host. ``token_id`` is the token minted for it
    alone. One live row per instance id: a host reused after its instance was
    terminated gets a row of its own, the terminated one stays as history.
    ``started_at`` is when it last started (its launch, or its latest resume): the
    start timeout counts from it."""

    __tablename__ = "instances"
    __table_args__ = (
        Index(
            "uq_instances_live_id",
            "namespace_id",
            "provider_name",
            "instance_id",
            unique=True,
            sqlite_where=text("terminated_at IS NULL"),
            postgresql_where=text("terminated_at IS NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    namespace_id: Mapped[int] = mapped_column(
        ForeignKey("namespaces.id", ondelete="CASCADE"), index=True, nullable=False
    )
    provider_name: Mapped[str] = mapped_column(String(255), index=True, nullable=False)
    launcher: Mapped[str] = mapped_column(String(63), nullable=False)
    instance_id: Mapped[str] = mapped_column(String(255), nullable=False)
    client_token: Mapped[str] = mapped_column(String(64), nullable=False)
    queue: Mapped[str | None] = mapped_column(String(63), nullable=True)
    state: Mapped[str] = mapped_column(String(32), default="pending", nullable=False)
    token_id: Mapped[int | None] = mapped_column(
        ForeignKey("tokens.id", ondelete="SET NULL"), nullable=True
    )
    details: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(
        UTCDateTime(), default=utcnow, onupdate=utcnow, nullable=False
    )
    terminated_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class Queue(Base):
    """A queue that grows its own workers through a provider (and a mode)."""

    __tablename__ = "queues"
    __table_args__ = (UniqueConstraint("namespace_id", "name", name="uq_queues_namespace_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    namespace_id: Mapped[int] = mapped_column(
        ForeignKey("namespaces.id", ondelete="CASCADE"), index=True, nullable=False
    )
    name: Mapped[str] = mapped_column(String(63), nullable=False)
    provider_name: Mapped[str] = mapped_column(String(255), nullable=False)
    mode: Mapped[str | None] = mapped_column(String(255), nullable=True)
    min_workers: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    max_workers: Mapped[int] = mapped_column(Integer, default=1, nullable=False)
    idle_seconds: Mapped[float] = mapped_column(Float, default=600.0, nullable=False)
    idle_action: Mapped[str] = mapped_column(String(16), default="terminate", nullable=False)
    # several providers to place on (``capacity.queueplace``); None: provider_name alone
    providers: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    strategy: Mapped[str | None] = mapped_column(String(16), nullable=True)
    server_url: Mapped[str] = mapped_column(String(1024), default="", nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(
        UTCDateTime(), default=utcnow, onupdate=utcnow, nullable=False
    )


class QueueEvent(Base):
    """One decision of the reconcile loop (launch, suspend, terminate, error)."""

    __tablename__ = "queue_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    namespace_id: Mapped[int] = mapped_column(
        ForeignKey("namespaces.id", ondelete="CASCADE"), index=True, nullable=False
    )
    queue: Mapped[str] = mapped_column(String(63), index=True, nullable=False)
    action: Mapped[str] = mapped_column(String(32), nullable=False)
    detail: Mapped[str] = mapped_column(Text, default="", nullable=False)
    holder: Mapped[str] = mapped_column(String(128), default="", nullable=False)
    at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, nullable=False)


class Lease(Base):
    """A named lease: whoever holds an unexpired one runs that loop."""

    __tablename__ = "leases"

    name: Mapped[str] = mapped_column(String(63), primary_key=True)
    holder: Mapped[str] = mapped_column(String(128), nullable=False)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False)
