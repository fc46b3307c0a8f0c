"""``terraform apply`` of exactly one saved plan file (a saved plan never prompts,
so no ``-auto-approve``), streaming ``-json`` events."""

from __future__ import annotations

from .plan import PLAN_FILE


def apply_args(*, plan_file: str = PLAN_FILE, lock_timeout: str = "0s") -> list[str]:
    return [
        "apply",
        "-input=false",
        "-no-color",
        "-json",
        f"-lock-timeout={lock_timeout}",
        plan_file,
    ]
