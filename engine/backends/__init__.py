"""Infrastructure backends behind one interface (see ``base``).

The names load on first use: the plan ``plan`` starts ahead
(``terraform.early``) needs none of them to start."""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from typing import Any

    from .base import ApplyOutcome, Backend, InfraState, PlanOutcome, get_backend


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import base

        return getattr(base, name)
    raise AttributeError(name)


__all__ = ["ApplyOutcome", "Backend", "InfraState", "PlanOutcome", "get_backend"]
