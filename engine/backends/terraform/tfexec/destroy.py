"""A destroy as terraform does it with a saved plan: ``plan -destroy -out=<file>``
(what would go, as a real plan with counts), then ``apply <file>`` (exactly that,
nothing else: a saved plan never prompts and refuses a state that moved since)."""

from __future__ import annotations

from ..planname import DESTROY_PLAN_FILE
from .apply import apply_args
from .plan import plan_args


def destroy_plan_args(*, out: str = DESTROY_PLAN_FILE, lock_timeout: str = "0s") -> list[str]:
    return plan_args(out=out, lock_timeout=lock_timeout, destroy=True)


def destroy_apply_args(
    *, plan_file: str = DESTROY_PLAN_FILE, lock_timeout: str = "0s"
) -> list[str]:
    return apply_args(plan_file=plan_file, lock_timeout=lock_timeout)
