"""What the engine sees, told to the control plane: each pass ``PUT``s a small
``observed`` document on every registered provider's ``lakeshore`` row, with the
engine's credentials for it (a namespace token, or the provider's own daemon token).

A provider without a row (never connected, or registered elsewhere) answers 404 and
is skipped; an unreachable control plane costs one short timeout per pass, once.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

from ..contract.result import ProviderLifecycleResult
from ..world.lakeshore import ControlPlane

TIMEOUT = 2.0


def observed_doc(
    res: ProviderLifecycleResult, target: str, pass_at: str, watcher: dict[str, Any]
) -> dict[str, Any]:
    """The document one provider's row gets: its derived status, what it should be,
    why it is degraded, its drift (when a drift record says), its next action and
    when the pass saw it."""
    wire = res.to_wire()
    doc: dict[str, Any] = {
        "status": res.status,
        "targetStatus": target,
        "degraded": list(res.degraded or []),
        "nextAction": wire.get("nextAction"),
        "passAt": pass_at,
        "watcher": watcher,
    }
    drift = wire.get("drift")
    if drift:
        doc["drift"] = _drift_summary(drift)
    return doc


def _drift_summary(drift: Any) -> Any:
    """The ``drift`` member, kept small: how many resources drifted, their addresses
    (at most 50) and when the check saw them (attribute names stay in the root)."""
    if not isinstance(drift, list):
        return drift
    items = [d for d in drift if isinstance(d, dict)]
    seen = [str(d["seenAt"]) for d in items if d.get("seenAt")]
    return {
        "count": len(drift),
        "resources": [str(d.get("address")) for d in items[:50]],
        "seenAt": max(seen) if seen else None,
    }


class Publisher:
    """``PUT .../providers/{name}/observed`` over one kept-alive connection per pass
    (the control plane's own client): 200 providers, one connection."""

    def __init__(self, cp: ControlPlane) -> None:
        from dreamlake.controlplane.client import Client

        self.client = Client.from_control_plane(cp, timeout=TIMEOUT)
        self.client.keep_alive = True
        self.namespace = cp.namespace

    def put(self, provider: str, doc: dict[str, Any]) -> int | None:
        """The HTTP status; None when the control plane could not be asked. Never raises."""
        from dreamlake.controlplane.client import ApiFailure

        path = "/api/namespaces/{}/providers/{}/observed".format(
            urllib.parse.quote(self.namespace, safe=""), urllib.parse.quote(provider, safe="")
        )
        try:
            self.client.request("PUT", path, doc)
        except ApiFailure as exc:
            return exc.status
        except Exception:
            return None
        return 200

    def close(self) -> None:
        self.client.close()


def put_observed(cp: ControlPlane, provider: str, doc: dict[str, Any]) -> int | None:
    """One ``PUT`` of ``provider``'s observed document (see :class:`Publisher`)."""
    if not cp.url or not cp.token:
        return None
    pub = Publisher(cp)
    try:
        return pub.put(provider, doc)
    finally:
        pub.close()


__all__ = ["Publisher", "observed_doc", "put_observed"]
