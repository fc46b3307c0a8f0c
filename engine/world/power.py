"""What the infrastructure says about its machines' power (a ``power_state``
output), read by ``status`` without the lifecycle machinery."""

from __future__ import annotations

from collections.abc import Mapping

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from typing import Any


def _plain(v: Any) -> Any:
    return v["value"] if isinstance(v, dict) and "value" in v else v


def power_stopped(outputs: Mapping[str, Any]) -> bool:
    """The ``power_state`` output (a string or a list, one per machine) says every
    machine is stopped. Absent: not stopped."""
    value = _plain(outputs.get("power_state")) if outputs else None
    if isinstance(value, str):
        values = [value]
    elif isinstance(value, list) and value:
        values = [str(v) for v in value]
    else:
        return False
    return all(v.lower() in ("stopped", "terminated", "suspended") for v in values)
