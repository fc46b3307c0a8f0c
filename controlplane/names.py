"""Name rules shared by namespaces, providers and queues."""

from __future__ import annotations

import re

NAME_PATTERN = r"^[a-z0-9][a-z0-9-]*$"
NAME_RE = re.compile(NAME_PATTERN)
NAME_MAX = 63


def is_name(value: str) -> bool:
    return len(value) <= NAME_MAX and NAME_RE.match(value) is not None
