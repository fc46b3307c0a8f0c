"""``terraform show -json`` of a saved plan file, or of the current state."""

from __future__ import annotations


def show_args(plan_file: str | None = None) -> list[str]:
    args = ["show", "-json", "-no-color"]
    if plan_file:
        args.append(plan_file)
    return args
