"""The ``dreamlake`` command tree with every command module registered, in the
order their commands are listed in help. ``cli/main.py`` adds the root's own
commands and runs it; the MCP server reads its ``provider`` verbs from here."""

from __future__ import annotations

# The order below is the order of the commands in `dreamlake provider --help`.
from .provider import verbs as provider_verbs  # noqa: F401  (create, status, plan, apply, connect)

# isort: split
from .provider import decisions as provider_set  # noqa: F401  (set)

# isort: split
from .provider import day2 as provider_day2  # noqa: F401  (destroy, delete, list)

# isort: split
from .provider import lifecycle as provider_lifecycle  # noqa: F401  (suspend, resume, reconcile)

# isort: split
from .provider import rows as provider_rows  # noqa: F401  (show, update)

# isort: split
from .provider import watch as provider_watch  # noqa: F401  (watch)

# isort: split
from .provider import drift as provider_drift  # noqa: F401  (drift)

# isort: split
from . import pool  # noqa: F401  (the pool group)

# isort: split
from .groups import app, provider_app

__all__ = ["app", "provider_app"]
