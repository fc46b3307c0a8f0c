"""The engine's view of the control plane: where it is, and who claims a provider.

Resolution (first hit wins): ``LAKESHORE_URL`` / ``LAKESHORE_NAMESPACE`` /
``LAKESHORE_TOKEN`` / ``LAKESHORE_TOKEN_FILE`` from the environment, then the
``lakeshore:`` section of ``.dreamrc``, then the embedded default
(``http://127.0.0.1:7878``, namespace ``default``, the admin token file that
``lakeshore serve`` writes under the user's data directory).

Asking for claims is bounded by a short timeout; an unreachable or unconfigured
control plane returns ``None`` (the caller adds ``degraded: ["no-lakeshore"]``).
Uses only the standard library so ``status`` stays fast.
"""

from __future__ import annotations

from dataclasses import dataclass

from .contract import Claim

EMBEDDED_URL = "http://127.0.0.1:7878"
DEFAULT_NAMESPACE = "default"


@dataclass(frozen=True)
class ControlPlane:
    url: str
    namespace: str = DEFAULT_NAMESPACE
    token: str | None = None
    source: str = "embedded default"


def resolve_control_plane(start: object | None = None) -> ControlPlane:
    # Filled in with the control plane: env, .dreamrc, embedded default.
    return ControlPlane(url=EMBEDDED_URL)


def fetch_claims(cp: ControlPlane, provider: str, *, timeout: float = 1.0) -> Claim | None:
    """``GET {url}/api/namespaces/{ns}/providers/{provider}/claims``; None when unreachable."""
    return None
