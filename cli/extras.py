"""The optional extras a command needs, and the one error when one is missing.

The base install is the CLI, the engine, the terraform backend's driver and the
control plane's client. ``lakeshore serve`` (and what opens the database: ``keys
rotate``) needs ``[server]``; ``dreamlake mcp`` needs ``[mcp]``; the pulumi backend
needs ``[pulumi]`` (its SDK; engine/backends/pulumi/runtime.py says so).
"""

from __future__ import annotations

import importlib.util

# The modules whose absence means the extra is not installed.
EXTRAS: dict[str, tuple[str, ...]] = {
    "server": ("fastapi", "uvicorn", "sqlalchemy", "alembic", "cryptography"),
    "mcp": ("mcp",),
    "pulumi": ("pulumi",),
}


def missing(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be imported here (none: it is installed)."""
    out = []
    for mod in EXTRAS[extra]:
        try:
            found = importlib.util.find_spec(mod) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            out.append(mod)
    return out


def install_line(extra: str) -> str:
    """The command that installs ``extra`` into the running interpreter's environment."""
    return f"pip install 'dreamlake[{extra}]'"
