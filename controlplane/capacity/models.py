"""Capacity tables: leases (a unit of capacity held until released or expired),
capacity back-off (a provider that refused a launch for capacity or quota, until
when), and the namespace's price table.

A granted lease holds a ``slot``: ``w:<worker id>`` on an idle worker, or
``u:<namespace>:<provider>:<n>`` for the n-th unit under the provider's instance
limit while an instance is launched for it. ``slot`` is unique and cleared when the
lease ends, so two replicas granting at once cannot hold the same unit: the second
insert fails on the index, on SQLite and PostgreSQL alike.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from ..db import Base, UTCDateTime, utcnow

ACTIVE = ("granted", "launching")


class CapacityLease(Base):
    __tablename__ = "capacity_leases"
    # a namespace's leases in force: asked by every claim of a work item (whether a
    # lease holds the worker, server/store.py) and by each grant; ended leases stay
    # as history, which SQLite (no statistics) read through ix_..._namespace_id
    __table_args__ = (Index("ix_capacity_leases_namespace_state", "namespace_id", "state"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    namespace_id: Mapped[int] = mapped_column(
        ForeignKey("namespaces.id", ondelete="CASCADE"), index=True, nullable=False
    )
    state: Mapped[str] = mapped_column(String(16), index=True, nullable=False)
    slot: Mapped[str | None] = mapped_column(String(400), unique=True, nullable=True)
    provider_name: Mapped[str | None] = mapped_column(String(255), nullable=True)
    offer: Mapped[str | None] = mapped_column(String(255), nullable=True)
    via: Mapped[str | None] = mapped_column(String(16), nullable=True)
    worker_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    instance_id: Mapped[str | None] = mapped_column(String(255), nullable=True)
    launched: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    """1 when the instance was launched for this lease (terminated when it ends)."""
    request: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict, nullable=False)
    decision: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    ttl_seconds: Mapped[float] = mapped_column(Float, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, nullable=False)
    granted_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True, nullable=False)
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    updated_at: Mapped[datetime] = mapped_column(
        UTCDateTime(), default=utcnow, onupdate=utcnow, nullable=False
    )


class CapacityBackoff(Base):
    """A provider that refused a launch for capacity or quota: not placed on until
    ``until``; each refusal in a row doubles the wait, up to a cap."""

    __tablename__ = "capacity_backoffs"
    __table_args__ = (
        UniqueConstraint("namespace_id", "provider_name", name="uq_capacity_backoffs_provider"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    namespace_id: Mapped[int] = mapped_column(
        ForeignKey("namespaces.id", ondelete="CASCADE"), index=True, nullable=False
    )
    provider_name: Mapped[str] = mapped_column(String(255), nullable=False)
    reason: Mapped[str] = mapped_column(Text, nullable=False)
    failures: Mapped[int] = mapped_column(Integer, default=1, nullable=False)
    until: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False)
    updated_at: Mapped[datetime] = mapped_column(
        UTCDateTime(), default=utcnow, onupdate=utcnow, nullable=False
    )


class CapacityPrices(Base):
    """The namespace's price table: ``{provider: {offer: price per hour}}``, ``"*"``
    for any provider. A provider's own ``kwargs.capacity.prices`` win over it."""

    __tablename__ = "capacity_prices"

    namespace_id: Mapped[int] = mapped_column(
        ForeignKey("namespaces.id", ondelete="CASCADE"), primary_key=True
    )
    prices: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(
        UTCDateTime(), default=utcnow, onupdate=utcnow, nullable=False
    )
