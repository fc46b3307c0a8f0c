"""Capacity back-off: after a provider refuses a launch for capacity or quota, it is
not placed on for a while — ``BASE`` seconds, doubling with each refusal in a row,
at most ``CAP`` — and the listing shows why and until when. A launch that succeeds
clears it. Rows, not memory: every replica sees the same back-off."""

from __future__ import annotations

import os
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ..db import utcnow
from .models import CapacityBackoff

BASE = float(os.environ.get("LAKESHORE_CAPACITY_BACKOFF", "15"))
CAP = float(os.environ.get("LAKESHORE_CAPACITY_BACKOFF_MAX", "900"))


def delay(failures: int, base: float = BASE, cap: float = CAP) -> float:
    """Seconds of back-off after ``failures`` refusals in a row (pure)."""
    return min(cap, base * 2 ** max(0, min(failures, 30) - 1))


def refused(
    session: Session, ns_id: int, provider: str, reason: str, now: datetime | None = None
) -> CapacityBackoff:
    """Record one refusal (committed): the back-off grows."""
    now = now or utcnow()
    for _ in range(3):
        row = session.scalar(
            select(CapacityBackoff).where(
                CapacityBackoff.namespace_id == ns_id, CapacityBackoff.provider_name == provider
            )
        )
        if row is None:
            row = CapacityBackoff(namespace_id=ns_id, provider_name=provider, failures=0)
            session.add(row)
        row.failures = (row.failures or 0) + 1
        row.reason = reason[:2000]
        row.until = now + timedelta(seconds=delay(row.failures))
        try:
            session.commit()
            return row
        except IntegrityError:  # another replica recorded the first refusal meanwhile
            session.rollback()
    raise RuntimeError(f"could not record the back-off of {provider}")


def cleared(session: Session, ns_id: int, provider: str) -> None:
    """A launch went through: the provider is no longer in back-off (committed)."""
    session.execute(
        delete(CapacityBackoff).where(
            CapacityBackoff.namespace_id == ns_id, CapacityBackoff.provider_name == provider
        )
    )
    session.commit()


def of_namespace(session: Session, ns_id: int) -> dict[str, CapacityBackoff]:
    rows = session.scalars(select(CapacityBackoff).where(CapacityBackoff.namespace_id == ns_id))
    return {r.provider_name: r for r in rows}
