"""Plain-text renderings of registry rows for the CLI (pure)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from .kwargs import is_secret_marker

KWARGS_WIDTH = 60


def flatten(value: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Dotted ``(key, leaf)`` pairs; secret markers stay leaves."""
    out: list[tuple[str, Any]] = []
    for key, v in value.items():
        dotted = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(v, Mapping) and v and not is_secret_marker(v):
            out.extend(flatten(v, dotted))
        else:
            out.append((dotted, v))
    return out


def leaf_text(value: Any) -> str:
    if is_secret_marker(value):
        return f"$secret:{value['$secret']}"
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def kwargs_summary(kwargs: Mapping[str, Any], width: int = KWARGS_WIDTH) -> str:
    text = " ".join(f"{k}={leaf_text(v)}" for k, v in flatten(kwargs))
    if not text:
        return "-"
    return text if len(text) <= width else text[: width - 1] + "…"


def display_name(row: Mapping[str, Any]) -> str:
    """Bare name first so ``grep NAME`` keeps working: ``name  [H]``, ``name  [D <iso>]``;
    a row stored with text that is not valid Unicode also ``[bad text: kwargs.host]``."""
    name = str(row["name"])
    bad = row.get("invalidText")
    mark = f"  [bad text: {', '.join(map(str, bad))}]" if bad else ""
    if row.get("deletedAt"):
        return f"{name}  [D {row['deletedAt']}]{mark}"
    if row.get("hidden"):
        return f"{name}  [H]{mark}"
    return name + mark


def table(headers: list[str], rows: Iterable[list[str]]) -> str:
    body = [list(map(str, r)) for r in rows]
    widths = [len(h) for h in headers]
    for r in body:
        for i, cell in enumerate(r):
            widths[i] = max(widths[i], len(cell))
    lines = []
    for r in [headers, *body]:
        cells = [c.ljust(widths[i]) for i, c in enumerate(r)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _age(iso: str, now: float) -> str:
    """``12s``, ``5m``, ``3h``, ``2d``: how long ago ``iso`` was (``?`` unparseable)."""
    from datetime import datetime

    try:
        then = datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return "?"
    secs = max(0, int(now - then))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= size:
            return f"{secs // size}{unit}"
    return f"{secs}s"


def observed_cell(row: Mapping[str, Any], now: float | None = None) -> str:
    """What the engine's watcher last published for the row: ``connected (12s ago)``;
    ``-`` when no watcher ever did. The age says since when a stopped watcher is silent."""
    import time

    obs = row.get("observed")
    if not isinstance(obs, Mapping) or not obs.get("status"):
        return "-"
    when = obs.get("observedAt")
    age = _age(str(when), time.time() if now is None else now) if when else "?"
    drift = " drift" if obs.get("drift") else ""
    return f"{obs['status']}{drift} ({age} ago)"


def providers_table(rows: Iterable[Mapping[str, Any]], now: float | None = None) -> str:
    """NAME LAUNCHER DISPATCH [OBSERVED] KWARGS; OBSERVED only when a watcher published
    for one of the rows."""
    rows = list(rows)
    observed = any(r.get("observed") for r in rows)
    head = ["NAME", "LAUNCHER", "DISPATCH", *(["OBSERVED"] if observed else []), "KWARGS"]
    return table(
        head,
        (
            [
                display_name(r),
                str(r["launcher"]),
                str(r["dispatch"]),
                *([observed_cell(r, now)] if observed else []),
                kwargs_summary(r.get("kwargs") or {}),
            ]
            for r in rows
        ),
    )


def provider_detail(row: Mapping[str, Any]) -> str:
    lines = [
        f"name:      {row['name']}",
        f"namespace: {row.get('namespace', '-')}",
        f"launcher:  {row['launcher']}",
        f"dispatch:  {row['dispatch']}",
    ]
    if row.get("tunnel"):
        lines.append(f"tunnel:    {row['tunnel']}")
    state = (
        "deleted " + str(row["deletedAt"])
        if row.get("deletedAt")
        else ("hidden" if row.get("hidden") else "active")
    )
    lines.append(f"state:     {state}")
    if row.get("observed"):
        lines.append(f"observed:  {observed_cell(row)}")
    if row.get("invalidText"):
        lines.append(
            "bad text:  "
            + ", ".join(map(str, row["invalidText"]))
            + " (not valid Unicode, shown escaped; write it again)"
        )
    pairs = flatten(row.get("kwargs") or {})
    lines.append("kwargs:" + ("" if pairs else "    (none)"))
    lines.extend(f"  {k} = {leaf_text(v)}" for k, v in pairs)
    return "\n".join(lines)


def secrets_table(rows: Iterable[Mapping[str, Any]]) -> str:
    return table(
        ["NAME", "KIND", "UPDATED"],
        ([str(r["name"]), str(r["kind"]), str(r.get("updatedAt") or "-")] for r in rows),
    )


def modes_table(rows: Iterable[Mapping[str, Any]]) -> str:
    def rest(r: Mapping[str, Any]) -> str:
        other = {
            k: v
            for k, v in r.items()
            if k
            not in ("name", "provider", "backend", "runner", "namespace", "createdAt", "updatedAt")
        }
        return kwargs_summary(other)

    return table(
        ["NAME", "PROVIDER", "BACKEND", "RUNNER", "FIELDS"],
        (
            [
                str(r["name"]),
                str(r.get("provider") or "-"),
                str(r.get("backend")),
                str(r.get("runner")),
                rest(r),
            ]
            for r in rows
        ),
    )


def mode_detail(row: Mapping[str, Any]) -> str:
    lines = [f"name: {row['name']}"]
    fields = {
        k: v for k, v in row.items() if k not in ("name", "namespace", "createdAt", "updatedAt")
    }
    lines.extend(f"  {k} = {leaf_text(v)}" for k, v in flatten(fields))
    return "\n".join(lines)
