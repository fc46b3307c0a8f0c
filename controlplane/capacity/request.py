"""A placement request as the wire states it: read and checked (``Request.from_wire``,
a sentence naming the field it refuses), and written back (``Request.wire``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

STRATEGIES = ("cheapest", "priority", "spread", "least-waste")
DEFAULT_TTL = 3600.0
MAX_TTL = 7 * 24 * 3600.0
REQUEST_FIELDS = (
    "accelerator",
    "accelerators",
    "cpus",
    "memoryGb",
    "maxPricePerHour",
    "spot",
    "providers",
    "excludeProviders",
    "strategy",
    "ttlSeconds",
)


class RequestError(ValueError):
    """A request that cannot be read: the sentence says which field and why."""


@dataclass(frozen=True, slots=True)
class Request:
    accelerator: str | None = None
    accelerators: int = 0
    cpus: float = 0.0
    memory_gb: float = 0.0
    max_price: float | None = None
    spot: bool | None = None
    providers: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    strategy: str = "cheapest"
    ttl: float = DEFAULT_TTL

    @classmethod
    def from_wire(cls, body: Mapping[str, Any], **defaults: Any) -> Request:
        if not isinstance(body, Mapping):
            raise RequestError("the request must be a JSON object")
        unknown = sorted(set(body) - set(REQUEST_FIELDS))
        if unknown:
            raise RequestError(
                f"unknown field(s) {', '.join(unknown)}; a request has {', '.join(REQUEST_FIELDS)}"
            )
        merged = {**defaults, **body}
        acc = merged.get("accelerator")
        if acc is not None and (not isinstance(acc, str) or not acc or len(acc) > 63):
            raise RequestError("accelerator must name an accelerator (e.g. A10G)")
        count = merged.get("accelerators", 1 if acc else 0)
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= 1024:
            raise RequestError("accelerators must be a whole number from 0 to 1024")
        strategy = merged.get("strategy") or "cheapest"
        if strategy not in STRATEGIES:
            raise RequestError(f"strategy must be one of {', '.join(STRATEGIES)}")
        spot = merged.get("spot")
        if spot is not None and not isinstance(spot, bool):
            raise RequestError("spot must be true, false or null (either)")
        ttl = _number(merged.get("ttlSeconds"), "ttlSeconds", DEFAULT_TTL)
        if not 1 <= ttl <= MAX_TTL:
            raise RequestError(f"ttlSeconds must be from 1 to {MAX_TTL:.0f}")
        max_price = merged.get("maxPricePerHour")
        return cls(
            accelerator=acc,
            accelerators=count,
            cpus=_number(merged.get("cpus"), "cpus", 0.0),
            memory_gb=_number(merged.get("memoryGb"), "memoryGb", 0.0),
            max_price=None if max_price is None else _number(max_price, "maxPricePerHour", 0.0),
            spot=spot,
            providers=_names(merged.get("providers"), "providers"),
            exclude=_names(merged.get("excludeProviders"), "excludeProviders"),
            strategy=strategy,
            ttl=ttl,
        )

    def wire(self) -> dict[str, Any]:
        return {
            "accelerator": self.accelerator,
            "accelerators": self.accelerators,
            "cpus": self.cpus,
            "memoryGb": self.memory_gb,
            "maxPricePerHour": self.max_price,
            "spot": self.spot,
            "providers": list(self.providers),
            "excludeProviders": list(self.exclude),
            "strategy": self.strategy,
            "ttlSeconds": self.ttl,
        }


def _number(v: Any, what: str, default: float) -> float:
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, int | float) or v < 0 or v != v:
        raise RequestError(f"{what} must be a number ≥ 0")
    return float(v)


def _names(v: Any, what: str) -> tuple[str, ...]:
    if v is None:
        return ()
    if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v) or len(v) > 1000:
        raise RequestError(f"{what} must be a list of provider names")
    return tuple(dict.fromkeys(v))
