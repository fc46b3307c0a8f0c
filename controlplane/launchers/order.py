"""What a launcher is handed: the merged spec plus the request's own facts."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..registry.merge import LaunchSpec


@dataclass(frozen=True)
class Bootstrap:
    """What a ``daemon``-dispatched instance needs to fetch and start ``nymph``:
    the control plane's URL, the daemon bundle's content hash, and one token per
    instance (``tokens[i]`` for the i-th instance of the request), scoped to the
    namespace and revoked when that instance is terminated: over https a one-use
    bootstrap token, spent on the daemon's certificate (``launch/tokens.py``)."""

    server: str
    daemon_sha256: str
    tokens: tuple[str, ...]
    queues: tuple[str, ...] = ()
    daemon_kind: str = "wheels"  # "pyz" (a zipapp python3 runs) or "wheels" (a tar)
    ca_pem: str = ""  # the CA certificate(s) (PEM) an https server is verified with


@dataclass(frozen=True)
class LaunchOrder(LaunchSpec):
    count: int = 1
    client_token: str = ""
    queue: str | None = None
    busy: tuple[str, ...] = ()
    bootstrap: Bootstrap | None = field(default=None, repr=False)
    identity: str | None = None
    """The provider row's identity (the lifecycle provider's ``prv-…`` id), if any."""
    server_credentials: bool = False
    """The operator lets a launch with no credentials secret use the server's own cloud
    credentials (``lakeshore serve --launch-server-credentials``)."""

    def short_token(self, n: int = 12) -> str:
        """The client token cut to a name-safe stem (for instance, pod and job names)."""
        return re.sub(r"[^a-z0-9]", "", self.client_token.lower())[:n] or "x"

    def name_for(self, index: int) -> str:
        """A stable, DNS-safe name for the index-th instance of this request."""
        return f"lakeshore-{self.provider}-{self.short_token()}-{index}"[:63].rstrip("-")
