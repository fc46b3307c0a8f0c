"""What the engine observed of a provider: the ``observed`` document its watcher
(``dreamlake provider watch``) publishes each pass, kept on the provider's row with
the time it arrived, returned on every read of the row.

Written by the provider's own daemon token or a namespace token of the row's own
namespace (an org sibling only reads it); replaced whole each time; small.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from ...db import utcnow
from ..models import Provider
from .common import RegistryError, Scope, iso, unprocessable

MAX_BYTES = 32 * 1024
STATUS_MAX = 32


def check_observed(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The document as stored: an object with a ``status`` string, at most
    :data:`MAX_BYTES` of JSON; ``observedAt`` is the server's to set."""
    status = doc.get("status")
    if not isinstance(status, str) or not status or len(status) > STATUS_MAX:
        raise unprocessable(
            f"status must be a provider status (a word of ≤{STATUS_MAX} characters)"
        )
    out = {k: v for k, v in doc.items() if k != "observedAt"}
    size = len(json.dumps(out, separators=(",", ":")))
    if size > MAX_BYTES:
        raise unprocessable(f"the observed document is {size} bytes; at most {MAX_BYTES} are kept")
    return out


def observed_wire(row: Provider) -> dict[str, Any] | None:
    """The row's ``observed`` member: the document and ``observedAt`` (None: never)."""
    if not isinstance(row.observed, dict) or row.observed_at is None:
        return None
    return {**row.observed, "observedAt": iso(row.observed_at)}


def put_observed(
    session: Session, scope: Scope, name: str, doc: Mapping[str, Any]
) -> dict[str, Any]:
    """Replace provider ``name``'s observed document (in the caller's own namespace)."""
    body = check_observed(doc)
    row = session.scalar(
        select(Provider).where(
            Provider.namespace_id == scope.namespace.id,
            Provider.name == name,
            Provider.deleted_at.is_(None),
        )
    )
    if row is None:
        raise RegistryError(
            404,
            "not_found",
            f"no provider named {name!r} in namespace {scope.namespace.name!r}: a watcher "
            "publishes only to a registered provider's row (connect registers it)",
        )
    now = utcnow()
    # updatedAt says when the row's configuration changed: a pass is not a change.
    session.execute(
        update(Provider)
        .where(Provider.id == row.id)
        .values(observed=body, observed_at=now, updated_at=Provider.updated_at)
    )
    session.commit()
    return {"name": name, "observed": {**body, "observedAt": iso(now)}}


__all__ = ["MAX_BYTES", "check_observed", "observed_wire", "put_observed"]
