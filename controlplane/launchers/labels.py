"""Tags as labels: GCE and Kubernetes label values allow only ``[a-z0-9_.-]`` (and
keys a little more), at most 63 characters."""

from __future__ import annotations

import re
from collections.abc import Mapping

from .order import LaunchOrder


def label_value(value: str) -> str:
    return re.sub(r"[^a-z0-9_.-]", "-", value.lower())[:63]


def labels(order: LaunchOrder) -> dict[str, str]:
    """``lakeshore=true`` + namespace + provider (+ queue, client token, the mode's tags)."""
    out: dict[str, str] = {}
    mode_tags = order.run.get("tags")
    if isinstance(mode_tags, Mapping):
        out.update({label_value(str(k)): label_value(str(v)) for k, v in mode_tags.items()})
    out.update({k: label_value(v) for k, v in order.tags.items()})
    out["lakeshore-client-token"] = label_value(order.client_token)
    if order.queue:
        out["lakeshore-queue"] = label_value(order.queue)
    return out


def selector(order: LaunchOrder) -> str:
    """A Kubernetes label selector for the managed three."""
    return ",".join(f"{k}={label_value(v)}" for k, v in sorted(order.tags.items()))
