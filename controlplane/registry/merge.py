"""The launch-time merge: one pure function, the same wherever the merge happens.

1. The RunConfig names its provider; the caller resolves that to a provider row.
2. Provider kwargs deep-merge with the RunConfig's launcher-shaped kwargs: objects
   merge recursively, arrays concatenate and de-duplicate, the RunConfig wins a
   scalar conflict.
3. Runner-side fields (``runner``, ``image``, ``resources``, ``env``, ``tags``,
   ``timeout_s``) and the RunConfig's own bookkeeping (``backend``, ``provider``,
   ``name``) stay on the RunConfig; the launcher never sees them.
4. Every launched instance carries the ``lakeshore=true``, namespace and provider
   tags, part of the merge output.

Secret markers pass through untouched here; ``secret_values.resolve_markers`` is the
separate, in-process step that swaps them for plaintext.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .kwargs import is_secret_marker
from .launchers import default_dispatch

RUNNER_FIELDS: tuple[str, ...] = ("runner", "image", "resources", "env", "tags", "timeout_s")
"""Consumed by the runtime layer, never by the launcher."""

RUNCONFIG_OWN: tuple[str, ...] = ("backend", "provider", "name", "dispatch")
"""The RunConfig's bookkeeping: not launcher kwargs either."""

TAG_MANAGED = "lakeshore"
TAG_NAMESPACE = "lakeshore-namespace"
TAG_PROVIDER = "lakeshore-provider"


def deep_merge(base: Any, over: Any) -> Any:
    """Merge ``over`` onto ``base``. Objects recurse, arrays concatenate and
    de-duplicate (first occurrence kept, order preserved), otherwise ``over`` wins.
    A secret marker is a scalar: it is replaced, never merged into."""
    if (
        isinstance(base, Mapping)
        and isinstance(over, Mapping)
        and not is_secret_marker(base)
        and not is_secret_marker(over)
    ):
        out: dict[str, Any] = {k: copy.deepcopy(v) for k, v in base.items()}
        for key, value in over.items():
            out[key] = deep_merge(out[key], value) if key in out else copy.deepcopy(value)
        return out
    if isinstance(base, list) and isinstance(over, list):
        return _dedupe([*base, *over])
    return copy.deepcopy(over)


def _dedupe(items: list[Any]) -> list[Any]:
    seen: set[str] = set()
    out: list[Any] = []
    for item in items:
        key = json.dumps(item, sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            out.append(copy.deepcopy(item))
    return out


def split_run_config(run_config: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(launcher-shaped kwargs, runner-side fields)`` of a RunConfig."""
    launcher_kwargs: dict[str, Any] = {}
    runner: dict[str, Any] = {}
    for key, value in run_config.items():
        if key in RUNNER_FIELDS:
            runner[key] = copy.deepcopy(value)
        elif key in RUNCONFIG_OWN:
            continue
        else:
            launcher_kwargs[key] = copy.deepcopy(value)
    return launcher_kwargs, runner


def instance_tags(namespace: str, provider: str) -> dict[str, str]:
    return {TAG_MANAGED: "true", TAG_NAMESPACE: namespace, TAG_PROVIDER: provider}


@dataclass(frozen=True)
class LaunchSpec:
    """What a launcher receives: merged kwargs, the tags for every instance, and the
    runner-side fields kept apart for the runtime layer."""

    provider: str
    namespace: str
    launcher: str
    dispatch: str
    kwargs: dict[str, Any]
    tags: dict[str, str]
    run: dict[str, Any] = field(default_factory=dict)

    def to_wire(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "namespace": self.namespace,
            "launcher": self.launcher,
            "dispatch": self.dispatch,
            "kwargs": self.kwargs,
            "tags": self.tags,
            "run": self.run,
        }


def merge_launch(
    *,
    provider_name: str,
    launcher: str,
    provider_kwargs: Mapping[str, Any],
    run_config: Mapping[str, Any],
    namespace: str,
    dispatch: str | None = None,
) -> LaunchSpec:
    """The launch-time merge (pure). ``dispatch`` is the provider's; a RunConfig
    ``dispatch`` is ignored (dispatch belongs to the provider row)."""
    launcher_kwargs, runner = split_run_config(run_config)
    merged = deep_merge(dict(provider_kwargs), launcher_kwargs)
    merged.pop("dispatch", None)
    return LaunchSpec(
        provider=provider_name,
        namespace=namespace,
        launcher=launcher,
        dispatch=dispatch or default_dispatch(launcher),
        kwargs=merged,
        tags=instance_tags(namespace, provider_name),
        run=runner,
    )
