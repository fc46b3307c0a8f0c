"""The launch route's seam: which launcher functions this control plane holds.

A launcher is ``fn(spec) -> mapping`` called with a :class:`~.merge.LaunchSpec`
whose kwargs carry decrypted secrets. It runs in the server process; what it
returns is scrubbed of every secret value before it is serialized, and so is the
message of any exception it raises.

Only ``EC2``, ``GCE`` and ``Kube`` may launch server-side; ``SSH`` and ``SLURM``
get a 422. A server with no launcher for a launchable kind answers 501 — nothing
was launched. Launchers are installed on ``app.state.registry_launchers``
(``{"EC2": fn, ...}``) by whoever embeds the server.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .merge import LaunchSpec

Launcher = Callable[[LaunchSpec], Mapping[str, Any]]
REDACTED = "[redacted]"


def secret_strings(value: Any) -> list[str]:
    """Every string leaf of ``value`` (the resolved kwargs' secret parts)."""
    if isinstance(value, str):
        return [value] if value else []
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in secret_strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in secret_strings(v)]
    return []


def _spellings(secret: str) -> list[str]:
    """How a secret can show up in text: as itself, escaped inside a repr or a JSON
    string (a multi-line key in ``repr(kwargs)``), and line by line."""
    return [
        secret,
        json.dumps(secret)[1:-1],
        repr(secret)[1:-1],
        *(line.strip() for line in secret.splitlines()),
    ]


def scrub(value: Any, secrets: Iterable[str]) -> Any:
    """A copy of ``value`` with every occurrence of a secret string redacted."""
    needles = sorted(
        {n for s in secrets for n in _spellings(s) if len(n) >= 4}, key=len, reverse=True
    )
    if not needles:
        return value

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            for n in needles:
                v = v.replace(n, REDACTED)
            return v
        if isinstance(v, Mapping):
            return {walk(str(k)): walk(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [walk(x) for x in v]
        return v

    return walk(value)
