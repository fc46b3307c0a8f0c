"""``terraform validate`` (``-json`` exists since 0.12; it takes no ``-input``)."""

from __future__ import annotations


def validate_args() -> list[str]:
    return ["validate", "-json", "-no-color"]
