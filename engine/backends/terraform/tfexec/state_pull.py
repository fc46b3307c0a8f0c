"""``terraform state pull``: the current state from whatever backend is configured."""

from __future__ import annotations


def state_pull_args() -> list[str]:
    return ["state", "pull"]
