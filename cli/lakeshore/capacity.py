"""``lakeshore capacity | lease``: capacity across providers, and leases on it.

    lakeshore capacity [--json]                      every provider: offers and state
    lakeshore capacity prices [--file PRICES.yaml]   show, or replace, the price table
    lakeshore capacity decide [REQUEST FLAGS] [--json]
    lakeshore lease request [REQUEST FLAGS] [--mode M] [--ttl S] [--json]
    lakeshore lease list [--all] | show ID | renew ID [--ttl S] | release ID  [--json]

REQUEST FLAGS: --accelerator A10G --accelerators 1 --cpus 4 --memory-gb 16
--max-price 2.5 --spot/--on-demand --providers P,Q --exclude P,Q (both also repeatable)
--strategy cheapest|priority|spread|least-waste. A lease that cannot be met now is
``pending`` with the reason (exit 0): the control plane grants it when capacity frees.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from .registry_common import (
    DataDirOpt,
    JsonOpt,
    NamespaceOpt,
    ServerOpt,
    TokenFileOpt,
    _call,
    _client,
    _emit,
    _kwargs,
)

capacity_app = typer.Typer(
    help="Capacity across providers: offers, prices, state, decisions.",
    invoke_without_command=True,
)
lease_app = typer.Typer(
    help="Leases on capacity (an idle worker or a launched instance).", no_args_is_help=True
)

AccOpt = Annotated[str | None, typer.Option("--accelerator", help="Accelerator, e.g. A10G.")]
AccCountOpt = Annotated[int | None, typer.Option("--accelerators", min=0, help="How many.")]
CpuOpt = Annotated[float | None, typer.Option("--cpus", min=0, help="CPUs at least.")]
MemOpt = Annotated[float | None, typer.Option("--memory-gb", min=0, help="Memory (GB) at least.")]
PriceOpt = Annotated[float | None, typer.Option("--max-price", min=0, help="Most per hour.")]
SpotOpt = Annotated[
    bool | None, typer.Option("--spot/--on-demand", help="Only spot, or only on-demand.")
]
ProvidersOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--providers",
        "--provider",
        "-p",
        help="Only these providers (the body's providers): comma-separated, or repeated.",
    ),
]
ExcludeOpt = Annotated[
    list[str] | None,
    typer.Option("--exclude", help="Never these providers: comma-separated, or repeated."),
]
StrategyOpt = Annotated[
    str | None,
    typer.Option("--strategy", help="cheapest (default), priority, spread or least-waste."),
]
TtlOpt = Annotated[float | None, typer.Option("--ttl", min=1, help="Seconds the lease lasts.")]


def _names(given: list[str] | None) -> list[str] | None:
    """``--providers a,b`` and ``-p a -p b`` alike: the names in order."""
    names = [n.strip() for item in given or [] for n in item.split(",") if n.strip()]
    return names or None


def _request(
    accelerator: str | None,
    accelerators: int | None,
    cpus: float | None,
    memory_gb: float | None,
    max_price: float | None,
    spot: bool | None,
    providers: list[str] | None,
    exclude: list[str] | None,
    strategy: str | None,
    ttl: float | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for key, value in (
        ("accelerator", accelerator),
        ("accelerators", accelerators),
        ("cpus", cpus),
        ("memoryGb", memory_gb),
        ("maxPricePerHour", max_price),
        ("spot", spot),
        ("providers", _names(providers)),
        ("excludeProviders", _names(exclude)),
        ("strategy", strategy),
        ("ttlSeconds", ttl),
    ):
        if value is not None:
            body[key] = value
    return body


def _offer_line(o: dict[str, Any]) -> str:
    parts = []
    if o.get("accelerator"):
        parts.append(f"{o['accelerator']} x{o['accelerators']}")
    if o.get("cpus") is not None:
        parts.append(f"{o['cpus']:g} CPU")
    if o.get("memoryGb") is not None:
        parts.append(f"{o['memoryGb']:g} GB")
    where = o.get("zone") or o.get("region")
    if where:
        parts.append(where)
    if o.get("spot"):
        parts.append("spot")
    price = o.get("pricePerHour")
    cost = f"{price:g}/h" if price is not None else "no price"
    return f"{o['offer']:<20} {', '.join(parts) or '-':<32} {cost}"


def capacity_prose(out: dict[str, Any]) -> str:
    lines: list[str] = []
    for p in out.get("providers", []):
        w = p["workers"]
        limit = p["limit"] if p["limit"] is not None else "∞"
        lines.append(
            f"{p['name']} ({p['launcher']})  workers {w['live']} live, {w['idle']} idle, "
            f"{w['launching']} launching  instances {p['instances']}/{limit}  leases {p['leases']}"
        )
        if p.get("error"):
            lines.append(f"  error: {p['error']}")
        lines.extend(f"  {_offer_line(o)}" for o in p["offers"])
        if p.get("backoff"):
            b = p["backoff"]
            lines.append(
                f"  back-off: {b['reason']} (refusal {b['failures']} in a row) until {b['until']}"
            )
    return "\n".join(lines) or "no providers"


@capacity_app.callback()
def capacity_command(
    ctx: typer.Context,
    server: ServerOpt = None,
    namespace: NamespaceOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Every provider you can see: its offers, prices and state."""
    if ctx.invoked_subcommand is not None:
        return
    client = _client(server, namespace, token_file, data_dir)
    out = _call(client, "GET", "capacity", timeout=60)
    _emit(out, as_json, capacity_prose(out))


def _price_table(doc: dict[str, Any]) -> dict[str, Any]:
    """The table a ``--file`` holds: the table itself, or the PUT body around it
    (``{"prices": {PROVIDER: {OFFER: PRICE}}}``, as docs/capacity.md shows it). A
    provider called ``prices`` has numbers under it, not tables: it stays a table."""
    inner = doc.get("prices")
    if not (len(doc) == 1 and isinstance(inner, dict) and inner):
        return doc
    return inner if all(isinstance(v, dict) for v in inner.values()) else doc


@capacity_app.command("prices")
def capacity_prices(
    file: Annotated[
        Path | None,
        typer.Option(
            "--file",
            help="YAML or JSON {PROVIDER or '*': {OFFER: PRICE}}, or the request body "
            "{prices: {...}} holding it, replacing the table.",
        ),
    ] = None,
    server: ServerOpt = None,
    namespace: NamespaceOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show the namespace's price table, or replace it from a file."""
    client = _client(server, namespace, token_file, data_dir)
    if file is None:
        out = _call(client, "GET", "capacity", "prices")
    else:
        table = _price_table(_kwargs(None, file, flag="--file"))
        out = _call(client, "PUT", "capacity", "prices", body={"prices": table})
    rows = [
        f"{p}/{o}  {price:g}/h"
        for p, entries in sorted(out["prices"].items())
        for o, price in sorted(entries.items())
    ]
    _emit(out, as_json, "\n".join(rows) or "no prices (offers show their own, or none)")


SHOWN = 5
"""Offers named per line of a decision in prose (the JSON names them all)."""


def decision_prose(doc: dict[str, Any]) -> str:
    lines = [doc["summary"]]
    for r in doc["rejected"]:
        names = r["offers"]
        shown = ", ".join(names[:SHOWN])
        if len(names) > SHOWN:
            shown += f" and {len(names) - SHOWN} more"
        lines.append(f"  {r['provider']}/{shown}: {r['reason']} — {r['detail']}")
    return "\n".join(lines)


@capacity_app.command("decide")
def capacity_decide(
    accelerator: AccOpt = None,
    accelerators: AccCountOpt = None,
    cpus: CpuOpt = None,
    memory_gb: MemOpt = None,
    max_price: PriceOpt = None,
    spot: SpotOpt = None,
    providers: ProvidersOpt = None,
    exclude: ExcludeOpt = None,
    strategy: StrategyOpt = None,
    server: ServerOpt = None,
    namespace: NamespaceOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Which offer a request would get now, and why not every other (leases nothing)."""
    body = _request(
        accelerator, accelerators, cpus, memory_gb, max_price, spot, providers, exclude, strategy
    )
    client = _client(server, namespace, token_file, data_dir)
    out = _call(client, "POST", "capacity", "decisions", body=body)
    _emit(out, as_json, decision_prose(out))


def lease_prose(lease: dict[str, Any]) -> str:
    where = f"{lease['provider']}/{lease['offer']}" if lease.get("provider") else "-"
    on = lease.get("workerId") or lease.get("instanceId") or ""
    head = f"{lease['id']}  {lease['state']}  {where}"
    if lease["state"] in ("granted", "launching"):
        via = "idle worker" if lease.get("via") == "idle" else "launched instance"
        head += f"  on {via} {on}  until {lease['expiresAt']}"
    elif lease["state"] == "pending":
        head += f"  until {lease['expiresAt']}\n  waiting: {lease.get('reason')}"
    return head


@lease_app.command("request")
def lease_request(
    accelerator: AccOpt = None,
    accelerators: AccCountOpt = None,
    cpus: CpuOpt = None,
    memory_gb: MemOpt = None,
    max_price: PriceOpt = None,
    spot: SpotOpt = None,
    providers: ProvidersOpt = None,
    exclude: ExcludeOpt = None,
    strategy: StrategyOpt = None,
    ttl: TtlOpt = None,
    mode: Annotated[
        str | None, typer.Option("--mode", "-m", help="What a launched instance runs.")
    ] = None,
    server: ServerOpt = None,
    namespace: NamespaceOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Lease capacity: granted now, or pending with the reason (then granted later)."""
    body = _request(
        accelerator,
        accelerators,
        cpus,
        memory_gb,
        max_price,
        spot,
        providers,
        exclude,
        strategy,
        ttl,
    )
    if mode:
        body["mode"] = mode
    client = _client(server, namespace, token_file, data_dir)
    out = _call(client, "POST", "capacity", "leases", body=body, timeout=900)
    tail = (
        f"next: lakeshore lease release {out['id']}"
        if out["state"] != "pending"
        else f"next: lakeshore lease show {out['id']}"
    )
    _emit(out, as_json, f"{lease_prose(out)}\n{decision_prose(out['decision'] or _NONE)}\n{tail}")


_NONE = {"summary": "no decision", "rejected": []}


@lease_app.command("list")
def lease_list(
    all_: Annotated[bool, typer.Option("--all", help="Also released and expired.")] = False,
    server: ServerOpt = None,
    namespace: NamespaceOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Leases of the namespace (granted and pending)."""
    client = _client(server, namespace, token_file, data_dir)
    out = _call(client, "GET", "capacity", "leases", query={"all": str(all_).lower()})
    _emit(out, as_json, "\n".join(lease_prose(x) for x in out["leases"]) or "no leases")


@lease_app.command("show")
def lease_show(
    lease_id: Annotated[str, typer.Argument(help="The lease id (lse-…).")],
    server: ServerOpt = None,
    namespace: NamespaceOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """One lease and its decision."""
    client = _client(server, namespace, token_file, data_dir)
    out = _call(client, "GET", "capacity", "leases", lease_id)
    _emit(out, as_json, f"{lease_prose(out)}\n{decision_prose(out['decision'] or _NONE)}")


@lease_app.command("renew")
def lease_renew(
    lease_id: Annotated[str, typer.Argument(help="The lease id (lse-…).")],
    ttl: TtlOpt = None,
    server: ServerOpt = None,
    namespace: NamespaceOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Move the lease's expiry: now plus its TTL (or --ttl)."""
    client = _client(server, namespace, token_file, data_dir)
    body = {"ttlSeconds": ttl} if ttl is not None else {}
    out = _call(client, "POST", "capacity", "leases", lease_id, "renew", body=body)
    _emit(out, as_json, lease_prose(out))


@lease_app.command("release")
def lease_release(
    lease_id: Annotated[str, typer.Argument(help="The lease id (lse-…).")],
    server: ServerOpt = None,
    namespace: NamespaceOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """End the lease: its unit is free at once (an instance launched for it is terminated)."""
    client = _client(server, namespace, token_file, data_dir)
    out = _call(client, "DELETE", "capacity", "leases", lease_id, timeout=300)
    extra = (
        f"\nwarning: terminate failed: {out['terminateError']}" if out.get("terminateError") else ""
    )
    _emit(out, as_json, lease_prose(out) + extra)
