"""``terraform apply`` of exactly one saved plan file (a saved plan never prompts,
so no ``-auto-approve``), streaming ``-json`` events."""

from __future__ import annotations

from ..planname import PLAN_FILE  # not through .plan: loaded alone before an apply started ahead


def apply_args(*, plan_file: str = PLAN_FILE, lock_timeout: str = "0s") -> list[str]:
    return [
        "apply",
        "-input=false",
        "-no-color",
        "-json",
        f"-lock-timeout={lock_timeout}",
        plan_file,
    ]
