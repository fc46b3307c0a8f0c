"""Registry tables on the core's ``Base``: providers, secrets, modes.

Column names follow the wire table of the spec: the API's ``launcher`` is
``Provider.kind`` (a free-form string, validated by the API, not the schema) and
``kwargs`` plus ``dispatch`` live in ``Provider.config``. A soft-deleted row's name
carries the ``[deleted <iso>]`` suffix so ``(namespace, name)`` stays unique.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, Float, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from ..db import Base, UTCDateTime, utcnow


class Provider(Base):
    __tablename__ = "providers"
    __table_args__ = (UniqueConstraint("namespace_id", "name", name="uq_providers_namespace_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    namespace_id: Mapped[int] = mapped_column(
        ForeignKey("namespaces.id", ondelete="CASCADE"), index=True, nullable=False
    )
    name: Mapped[str] = mapped_column(String(255), nullable=False)
    kind: Mapped[str] = mapped_column(String(63), nullable=False)
    config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict, nullable=False)
    hidden: Mapped[bool] = mapped_column(Boolean, default=False, nullable=False)
    # The lifecycle provider (provider.json ``id``) that owns this name; None for a
    # row registered by hand until a lifecycle provider of that name adopts it.
    identity: Mapped[str | None] = mapped_column(String(64), nullable=True)
    deleted_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # What the engine's watcher last saw of this provider (its derived status,
    # drift, next action) and when it was published; None until a watcher publishes.
    observed: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    observed_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(
        UTCDateTime(), default=utcnow, onupdate=utcnow, nullable=False
    )


class Secret(Base):
    """An encrypted value. ``ciphertext`` is a Fernet token; the key is not here,
    only its id."""

    __tablename__ = "secrets"
    __table_args__ = (UniqueConstraint("namespace_id", "name", name="uq_secrets_namespace_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    namespace_id: Mapped[int] = mapped_column(
        ForeignKey("namespaces.id", ondelete="CASCADE"), index=True, nullable=False
    )
    name: Mapped[str] = mapped_column(String(255), nullable=False)
    kind: Mapped[str] = mapped_column(String(32), nullable=False)
    ciphertext: Mapped[str] = mapped_column(Text, nullable=False)
    # the id of the key that encrypted ``ciphertext`` (crypto.key_id); NULL on a row
    # from before key ids, which a server starting with the current key fills in
    key_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(
        UTCDateTime(), default=utcnow, onupdate=utcnow, nullable=False
    )


class Mode(Base):
    """A stored RunConfig. Unknown fields sit in ``resources["__extras"]``."""

    __tablename__ = "modes"
    __table_args__ = (UniqueConstraint("namespace_id", "name", name="uq_modes_namespace_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    namespace_id: Mapped[int] = mapped_column(
        ForeignKey("namespaces.id", ondelete="CASCADE"), index=True, nullable=False
    )
    name: Mapped[str] = mapped_column(String(255), nullable=False)
    backend: Mapped[str] = mapped_column(String(63), default="fabric", nullable=False)
    runner: Mapped[str] = mapped_column(String(63), default="process", nullable=False)
    image: Mapped[str | None] = mapped_column(String(1024), nullable=True)
    tags: Mapped[Any] = mapped_column(JSON, nullable=True)
    resources: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    env: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    timeout_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    provider: Mapped[str | None] = mapped_column(String(255), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(
        UTCDateTime(), default=utcnow, onupdate=utcnow, nullable=False
    )
