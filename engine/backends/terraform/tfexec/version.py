"""``terraform version -json``."""

from __future__ import annotations


def version_args() -> list[str]:
    return ["version", "-json"]
