"""What to do when the control plane refuses a verb's request.

A next action must change something: re-running the verb against the same control
plane gets the same answer. A namespace that does not exist is an admin's step
(``lakeshore namespaces add``, flagged for a person); a token that may not mint is
a setting to change, and so is a server not verified over TLS (its CA, its URL's
scheme); a control plane that does not answer is started (the embedded one) or
checked. Standard library only.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from ..contract.result import EditThenContinue, Shell
from .lakeshore import EMBEDDED_URL, ControlPlane, is_loopback
from .paths import nearest_dreamrc

SERVE_IN_BACKGROUND = "nohup lakeshore serve >lakeshore.log 2>&1 &"
"""`lakeshore serve` in the foreground never returns: an agent would wait forever."""
SERVER_INSTALL = "pip install 'dreamlake[server]'"
"""`lakeshore serve` is the `server` extra: where it is missing, installing it comes first."""


def server_installed() -> bool:
    """Whether ``lakeshore serve`` could run here (its web stack can be found)."""
    import importlib.util

    try:
        return all(importlib.util.find_spec(m) is not None for m in ("fastapi", "uvicorn"))
    except (ImportError, ValueError):
        return False


def _serve(cp: ControlPlane, command: str, where: str) -> tuple[Shell, str]:
    if not server_installed():
        return (
            Shell(command=SERVER_INSTALL, approval=True),
            f"nothing answers at {cp.url}, and {where} cannot be started here: "
            f"`lakeshore serve` is the server extra ({SERVER_INSTALL}); install it, "
            f"then start it ({command}) and re-run",
        )
    return Shell(command=command), f"nothing answers at {cp.url}: start {where}, then re-run"


def missing_namespace(exc: Any) -> bool:
    """Whether the control plane's answer (a client ``ApiFailure``) says the
    namespace does not exist."""
    return (
        getattr(exc, "status", None) == 404
        and getattr(exc, "error", None) == "not_found"
        and str(getattr(exc, "detail", "")).startswith("no namespace named")
    )


def add_namespace_command(cp: ControlPlane) -> str:
    """The admin's command that creates the namespace ``cp`` names."""
    server = f" --server {shlex.quote(cp.url)}" if cp.url != EMBEDDED_URL else ""
    return f"lakeshore namespaces add {shlex.quote(cp.namespace)}{server}"


def add_namespace(cp: ControlPlane) -> Shell:
    """The admin's step, flagged for a person: tokens below admin cannot create a
    namespace, and choosing one is a person's decision."""
    return Shell(command=add_namespace_command(cp), approval=True)


def add_namespace_why(cp: ControlPlane) -> str:
    return (
        f"namespace {cp.namespace!r} does not exist on {cp.url}: creating it is an admin's "
        f"step ({add_namespace_command(cp)}), or set LAKESHORE_NAMESPACE to one that exists"
    )


def next_for(
    cp: ControlPlane, exc: Exception, root: Path, retry: str
) -> tuple[EditThenContinue | Shell, str]:
    """The next action for a refused or failed request, and a sentence that says
    what it changes. ``retry`` is the verb's own command, run after the fix."""
    status = getattr(exc, "status", None)
    if missing_namespace(exc):
        return add_namespace(cp), add_namespace_why(cp)
    if status in (401, 403):
        rc = nearest_dreamrc(root) or root / ".dreamrc"
        return (
            EditThenContinue(file=str(rc), command=retry),
            f"the token in use (from {cp.source}) may not do this: give an admin token "
            f"(token_file under lakeshore: in {rc}, or LAKESHORE_TOKEN), then re-run",
        )
    if getattr(exc, "kind", None) == "lakeshore_untrusted":  # the client's Untrusted
        rc = nearest_dreamrc(root) or root / ".dreamrc"
        advice = getattr(exc, "advice", "") or "see docs/deploy.md"
        if getattr(exc, "reason", None) in ("plain_to_tls", "not_tls"):  # the URL's scheme
            advice += f" (lakeshore: url in {rc}, or LAKESHORE_URL)"
        return EditThenContinue(file=str(rc), command=retry), f"{advice}, then re-run"
    if status is None and cp.url == EMBEDDED_URL:
        return _serve(cp, SERVE_IN_BACKGROUND, "the embedded control plane")
    if status is None and is_loopback(cp.url):
        port = cp.url.rsplit(":", 1)[-1].split("/")[0]
        command = f"nohup lakeshore serve --port {port} >lakeshore.log 2>&1 &"
        return _serve(cp, command, "the control plane there")
    return (
        Shell(command=f"curl -fsS {shlex.quote(cp.url.rstrip('/') + '/healthz')}"),
        f"the control plane at {cp.url} did not do it: check that it answers, then re-run",
    )


__all__ = [
    "SERVER_INSTALL",
    "SERVE_IN_BACKGROUND",
    "add_namespace",
    "add_namespace_command",
    "add_namespace_why",
    "missing_namespace",
    "next_for",
    "server_installed",
]
