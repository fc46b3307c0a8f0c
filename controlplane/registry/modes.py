"""Modes: stored RunConfigs. Recognised fields map to columns; anything else is
stashed under ``resources.__extras`` and folded back to the top level on read, so
unknown keys survive a round trip.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

RECOGNISED: tuple[str, ...] = (
    "backend",
    "runner",
    "image",
    "tags",
    "resources",
    "env",
    "timeout_s",
    "provider",
)
EXTRAS_KEY = "__extras"
DEFAULT_BACKEND = "fabric"
DEFAULT_RUNNER = "process"


class ModeFieldError(ValueError):
    """A recognised field with a value of the wrong shape."""


_SHAPES: dict[str, tuple[type, ...]] = {
    "backend": (str,),
    "runner": (str,),
    "image": (str,),
    "provider": (str,),
    "tags": (dict, list),
    "resources": (dict,),
    "env": (dict,),
    "timeout_s": (int, float),
}


_MAX_CHARS: dict[str, int] = {"backend": 63, "runner": 63, "image": 1024, "provider": 255}
"""The string columns' widths: PostgreSQL enforces them, SQLite would not."""


def to_storage(fields: Mapping[str, Any], *, defaults: bool = True) -> dict[str, Any]:
    """Flat RunConfig -> column values, extras moved into ``resources.__extras``."""
    stored: dict[str, Any] = {}
    extras: dict[str, Any] = {}
    for key, value in fields.items():
        if key == "name":
            continue
        if key in RECOGNISED:
            if value is not None and not isinstance(value, _SHAPES[key]):
                raise ModeFieldError(
                    f"field {key!r} must be {' or '.join(t.__name__ for t in _SHAPES[key])}, "
                    f"not {type(value).__name__}"
                )
            if isinstance(value, bool) and key == "timeout_s":
                raise ModeFieldError("field 'timeout_s' must be a number of seconds")
            if isinstance(value, str) and key in _MAX_CHARS:
                if len(value) > _MAX_CHARS[key]:
                    raise ModeFieldError(
                        f"field {key!r} is longer than {_MAX_CHARS[key]} characters"
                    )
                if "\x00" in value:
                    raise ModeFieldError(f"field {key!r} cannot contain a NUL character")
            stored[key] = copy.deepcopy(value)
        else:
            extras[key] = copy.deepcopy(value)
    resources = dict(stored.get("resources") or {})
    if EXTRAS_KEY in resources and not isinstance(resources[EXTRAS_KEY], dict):
        raise ModeFieldError(f"resources.{EXTRAS_KEY} is reserved")
    if extras:
        resources[EXTRAS_KEY] = {**(resources.get(EXTRAS_KEY) or {}), **extras}
    if resources or "resources" in stored:
        stored["resources"] = resources
    if defaults:
        stored["backend"] = stored.get("backend") or DEFAULT_BACKEND
        stored["runner"] = stored.get("runner") or DEFAULT_RUNNER
    return stored


def from_storage(stored: Mapping[str, Any]) -> dict[str, Any]:
    """Column values -> flat RunConfig with extras folded back in (recognised fields
    win a name clash, which ``to_storage`` never produces)."""
    out: dict[str, Any] = {}
    extras: dict[str, Any] = {}
    for key in RECOGNISED:
        value = stored.get(key)
        if value is None:
            continue
        if key == "resources":
            res = dict(value)
            extras = dict(res.pop(EXTRAS_KEY, None) or {})
            if res:
                out["resources"] = res
        else:
            out[key] = copy.deepcopy(value)
    for key, value in extras.items():
        out.setdefault(key, value)
    return out
