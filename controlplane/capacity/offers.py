"""Offers: what a provider can give, one row per instance type, partition or host.

A provider declares its offers in ``kwargs.capacity``::

    capacity:
      limit: 8                      # most instances at once (default: unlimited;
                                    # an SSH pool: its host count)
      priority: 10                  # the ``priority`` strategy's order (higher first)
      prices: {g5.xlarge: 1.006}    # price per hour by offer name
      offers:
        - name: g5.xlarge
          accelerator: A10G
          accelerators: 1
          cpus: 4
          memoryGb: 16
          region: us-east-1
          zone: us-east-1a
          spot: false
          launch: {instance_type: g5.xlarge}   # kwargs a launch of this offer uses

Without ``offers`` one offer is derived from what the launcher really launches:
the kwargs it uses (EC2 ``instance_type``, GCE ``machine_type``, SLURM
``partition``), else the launcher's own default; one per SSH host (named by the
host, never by a kwarg's name: an SSH row with no host has no offer), a Kube
``pod``. A lifecycle provider's row carries the template variables that choose
what it launches (``instance_type``, ``machine_type``, ``zone``). Prices come only from tables the operator supplies: the provider's
own ``prices`` first, then the namespace's price table (``{provider: {offer:
price}}``, ``"*"`` for any provider), then an offer's own ``pricePerHour``. Nothing
is fetched from anywhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

ANY_PROVIDER = "*"


@dataclass(frozen=True, slots=True)
class Offer:
    provider: str
    name: str
    launcher: str = ""
    accelerator: str | None = None
    accelerators: int = 0
    cpus: float | None = None
    memory_gb: float | None = None
    region: str | None = None
    zone: str | None = None
    spot: bool = False
    price: float | None = None
    launch: Mapping[str, Any] = field(default_factory=dict)

    def wire(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "offer": self.name,
            "launcher": self.launcher,
            "accelerator": self.accelerator,
            "accelerators": self.accelerators,
            "cpus": self.cpus,
            "memoryGb": self.memory_gb,
            "region": self.region,
            "zone": self.zone,
            "spot": self.spot,
            "pricePerHour": self.price,
        }


class OfferError(ValueError):
    """A provider's ``capacity`` kwarg cannot be read (says which field)."""


def _num(v: Any, what: str) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float) or not v >= 0:
        raise OfferError(f"{what} must be a number ≥ 0")  # NaN is not ≥ 0 either
    return float(v)


def capacity_kwargs(kwargs: Mapping[str, Any]) -> Mapping[str, Any]:
    cap = kwargs.get("capacity") or {}
    if not isinstance(cap, Mapping):
        raise OfferError("kwargs.capacity must be an object")
    return cap


def _ssh_hosts(kwargs: Mapping[str, Any]) -> list[str]:
    """The hosts an SSH launch goes to (``hosts``, else ``host``): names only."""
    hosts = kwargs.get("hosts")
    if isinstance(hosts, list) and hosts:
        return [h for h in hosts if isinstance(h, str) and h]
    host = kwargs.get("host")
    return [host] if isinstance(host, str) and host else []


def _derived(launcher: str, kwargs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The one offer a provider without ``capacity.offers`` has (SSH: one per host,
    none without a host)."""
    if launcher == "EC2":
        from ..launchers.ec2 import DEFAULT_INSTANCE_TYPE

        name = str(kwargs.get("instance_type") or DEFAULT_INSTANCE_TYPE)
        return [{"name": name, "region": kwargs.get("region")}]
    if launcher == "GCE":
        from ..launchers.gce import DEFAULT_MACHINE_TYPE

        name = str(kwargs.get("machine_type") or DEFAULT_MACHINE_TYPE)
        zone = kwargs.get("zone")
        region = zone.rsplit("-", 1)[0] if isinstance(zone, str) and "-" in zone else None
        return [{"name": name, "zone": zone, "region": region}]
    if launcher == "SLURM":
        return [{"name": str(kwargs.get("partition") or "default")}]
    if launcher == "SSH":
        return [{"name": h} for h in _ssh_hosts(kwargs)]
    return [{"name": "pod"}]


def limit_of(launcher: str, kwargs: Mapping[str, Any]) -> int | None:
    """The provider's instance limit: ``capacity.limit``, else an SSH pool's host count."""
    cap = capacity_kwargs(kwargs)
    limit = cap.get("limit")
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise OfferError("kwargs.capacity.limit must be a whole number ≥ 0")
        return int(limit)
    if launcher == "SSH":
        return len(_ssh_hosts(kwargs))
    return None


def priority_of(kwargs: Mapping[str, Any]) -> float:
    return _num(capacity_kwargs(kwargs).get("priority"), "kwargs.capacity.priority") or 0.0


def price_for(
    provider: str,
    offer: str,
    own: Mapping[str, Any],
    table: Mapping[str, Any],
    listed: Any,
) -> float | None:
    """The provider's own price, then the namespace table's, then the offer's own."""
    for source in (own, table.get(provider) or {}, table.get(ANY_PROVIDER) or {}):
        if isinstance(source, Mapping) and offer in source:
            return _num(source[offer], f"the price of {provider}/{offer}")
    return _num(listed, f"{provider}/{offer} pricePerHour")


def offers_of(
    provider: str,
    launcher: str,
    kwargs: Mapping[str, Any],
    table: Mapping[str, Any] | None = None,
) -> list[Offer]:
    """Every offer of one provider row, priced from the tables (pure)."""
    cap = capacity_kwargs(kwargs)
    raw = cap.get("offers")
    if raw is None:
        raw = _derived(launcher, kwargs)
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        raise OfferError("kwargs.capacity.offers must be a list of offers")
    own = cap.get("prices") or {}
    if not isinstance(own, Mapping):
        raise OfferError("kwargs.capacity.prices must map offer names to prices")
    out: list[Offer] = []
    for n, item in enumerate(raw):
        if not isinstance(item, Mapping) or not item.get("name"):
            raise OfferError(f"kwargs.capacity.offers[{n}] must be an object with a name")
        name = str(item["name"])
        launch = item.get("launch")
        if launch is None:
            launch = _launch_kwargs(launcher, name, item)
        if not isinstance(launch, Mapping):
            raise OfferError(f"kwargs.capacity.offers[{n}].launch must be an object")
        count = item.get("accelerators", 1 if item.get("accelerator") else 0)
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise OfferError(f"kwargs.capacity.offers[{n}].accelerators must be a whole number")
        out.append(
            Offer(
                provider=provider,
                name=name,
                launcher=launcher,
                accelerator=str(item["accelerator"]) if item.get("accelerator") else None,
                accelerators=count,
                cpus=_num(item.get("cpus"), f"offers[{n}].cpus"),
                memory_gb=_num(item.get("memoryGb"), f"offers[{n}].memoryGb"),
                region=_str(item.get("region")),
                zone=_str(item.get("zone")),
                spot=bool(item.get("spot", False)),
                price=price_for(provider, name, own, table or {}, item.get("pricePerHour")),
                launch=dict(launch),
            )
        )
    return out


def _str(v: Any) -> str | None:
    return str(v) if v not in (None, "") else None


def _launch_kwargs(launcher: str, name: str, item: Mapping[str, Any]) -> dict[str, Any]:
    """The kwargs that launch this offer when the offer does not say."""
    key = {"EC2": "instance_type", "GCE": "machine_type", "SLURM": "partition"}.get(launcher)
    return {key: name} if key else {}
