"""When a decision's value is still the template's placeholder.

The convention, for every backend:

* a decision in ``TEMPLATE.json`` may carry ``"placeholder": <value>``; a value
  equal to it is a placeholder;
* any string (at any depth of a list or map) containing one of
  :data:`MARKERS`, case-insensitively, is a placeholder too — so a template can
  ship ``worker_name = "CHANGE-ME"`` or ``tags = {team = "CHANGE-ME"}``.
"""

from __future__ import annotations

from typing import Any

MARKERS: tuple[str, ...] = ("CHANGE-ME", "CHANGEME", "REPLACE-ME")


def _has_marker(value: Any) -> bool:
    if isinstance(value, str):
        upper = value.upper()
        return any(m in upper for m in MARKERS)
    if isinstance(value, list | tuple):
        return any(_has_marker(v) for v in value)
    if isinstance(value, dict):
        return any(_has_marker(k) or _has_marker(v) for k, v in value.items())
    return False


def is_placeholder(value: Any, placeholder: Any = None) -> bool:
    """True when ``value`` is still the template's placeholder."""
    if placeholder is not None and value == placeholder and type(value) is type(placeholder):
        return True
    return _has_marker(value)


__all__ = ["MARKERS", "is_placeholder"]
