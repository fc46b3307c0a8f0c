"""Soft-delete names: ``<name> [deleted <iso>]`` keeps ``(namespace, name)`` unique.

The stored name carries the suffix; every response strips it.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

_SUFFIX_RE = re.compile(r"^(?P<name>.*?) \[deleted (?P<iso>[^\]]+)\]$")


def iso_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def iso(dt: datetime) -> str:
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def tombstone(name: str, deleted_iso: str) -> str:
    return f"{name} [deleted {deleted_iso}]"


def strip(stored: str) -> str:
    """The original name of a stored (possibly tombstoned) name."""
    m = _SUFFIX_RE.match(stored)
    return m.group("name") if m else stored


def is_tombstoned(stored: str) -> bool:
    return _SUFFIX_RE.match(stored) is not None
