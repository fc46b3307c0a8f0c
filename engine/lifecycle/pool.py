"""Pools: a set of providers whose target status a small controller sets.

A provider joins a pool by ``"pool": "NAME"`` in its ``provider.json``. A member
whose target is ``suspended`` is free; one whose target is ``active`` is taken.
There is no other pool state: the targets in the members' own configuration are
the pool.

* :func:`acquire` takes the free member cheapest to bring back — one whose state is
  kept (``suspended``) before one with nothing to resume — sets its target to
  ``active`` and resumes it. Choosing and setting the target happen under one lock
  per pool (``.dream/pools/NAME.lock``, an ``flock``), so concurrent acquires never
  hand out the same member. A resume that needs a person's yes gives the member back.
* :func:`release` suspends a member (under the same lock).
* :func:`pool_status` lists the members, their target and their status.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field

from ..contract import commands
from ..contract.errors import DreamlakeError, UsageError
from ..contract.result import ProviderLifecycleResult, Run, _Wire
from ..world.paths import ProviderPaths, Root
from ..world.record import read_record
from .target import read_target, write_target

# Cheapest first: a kept state resumes; anything else starts (nearly) from nothing.
_COST = {"suspended": 0, "unclaimed": 1, "applied": 1, "connecting": 2}


class PoolMember(_Wire):
    provider: str
    vendor: str
    target: str = Field(
        description="active (taken), suspended (free), or invalid (a bad target_status)."
    )
    status: str = Field(description="The provider's status, as `provider status` derives it.")


class PoolStatus(_Wire):
    pool: str
    root: str
    members: list[PoolMember]
    free: int = Field(ge=0)
    taken: int = Field(ge=0)


@dataclass(frozen=True)
class _Member:
    name: str
    vendor: str
    backend: str


def members(root: Root, pool: str) -> list[_Member]:
    """The providers of ``root`` whose provider.json names ``pool``, by name."""
    out = []
    for name in root.known_providers():
        paths = ProviderPaths(root.provider_dir(name))
        try:
            rec = read_record(paths.provider_json)
        except Exception:
            continue  # a broken record is reported by status, not by the pool
        if rec is not None and rec.pool == pool:
            out.append(_Member(name, rec.vendor, rec.backend))
    return out


def _check_pool(pool: str) -> None:
    """A pool's name is a file name under ``.dream/pools``: never a path."""
    if not pool or "/" in pool or pool.startswith("."):
        raise UsageError(f"{pool!r} is not a pool name (the `pool` a provider.json names)")


def _bad_pool(exc: UsageError, root: Root, dream_dir: str | None) -> ProviderLifecycleResult:
    """An error result, not a traceback; next: the providers and the pools they name."""
    from ..verbs._common import error_result

    exc.next_action = Run(command=commands.list_(dream_dir))
    return error_result(exc, "", root=root, dream_dir=dream_dir)


@contextlib.contextmanager
def pool_lock(root: Root, pool: str) -> Iterator[None]:
    """One process at a time changes a pool's targets."""
    _check_pool(pool)
    path = root.dream / "pools" / f"{pool}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing drops the lock


def _target(root: Root, m: _Member) -> str:
    """The member's target; ``invalid`` when its value is not one (status says why,
    with the file to edit): neither free nor handed out."""
    try:
        return read_target(ProviderPaths(root.provider_dir(m.name)), m.backend)
    except DreamlakeError:
        return "invalid"


def _status(root: Root, m: _Member, dream_dir: str | None) -> str:
    from ..verbs.status import status

    return status(m.name, dream_dir=dream_dir or str(root.path), probe=False).status


def pool_status(pool: str, *, dream_dir: str | None = None, cwd: Path | None = None) -> PoolStatus:
    from ..verbs._common import root_for

    root = root_for(dream_dir, cwd)
    rows = [
        PoolMember(
            provider=m.name,
            vendor=m.vendor,
            target=_target(root, m),
            status=_status(root, m, dream_dir),
        )
        for m in members(root, pool)
    ]
    free = sum(1 for r in rows if r.target == "suspended")
    return PoolStatus(
        pool=pool, root=str(root.path), members=rows, free=free, taken=len(rows) - free
    )


def _none_free(root: Root, pool: str, known: int, dream_dir: str | None) -> ProviderLifecycleResult:
    from ..world.lakeshore import resolve_control_plane

    cp = resolve_control_plane(root.path)
    why = (
        f'pool {pool!r} has no members under {root.providers} (add "pool": "{pool}" to a '
        "provider.json)"
        if known == 0
        else f"every member of pool {pool!r} is taken ({known}); release one first"
    )
    nxt = Run(command=commands.pool_status(pool, dream_dir))
    if known:
        # Every member taken is the pool's answer, not a failure of the tool: exit 0.
        res = ProviderLifecycleResult(
            status="needs_input",
            provider="",
            server=cp.url,
            namespace=cp.namespace,
            next_action=nxt,
            files=[],
            kind="pool_exhausted",
            root=str(root.path),
        )
        return res.with_headline(f"⚠ {why} — nothing was taken")
    return ProviderLifecycleResult(
        status="error",
        provider="",
        server=cp.url,
        namespace=cp.namespace,
        next_action=nxt,
        error=why,
        kind="pool_empty",
        root=str(root.path),
    )


def acquire(
    pool: str,
    *,
    yes: bool = False,
    dream_dir: str | None = None,
    cwd: Path | None = None,
    progress: object | None = None,
) -> ProviderLifecycleResult:
    """Take the cheapest free member of ``pool`` and resume it; its result names it."""
    from ..verbs._common import root_for
    from ..verbs.resume import resume

    root = root_for(dream_dir, cwd)
    try:
        _check_pool(pool)
    except UsageError as exc:
        return _bad_pool(exc, root, dream_dir)
    with pool_lock(root, pool):
        all_members = members(root, pool)
        free = [m for m in all_members if _target(root, m) == "suspended"]
        if not free:
            return _none_free(root, pool, len(all_members), dream_dir)
        ranked = sorted(free, key=lambda m: (_COST.get(_status(root, m, dream_dir), 3), m.name))
        chosen = ranked[0]
        paths = ProviderPaths(root.provider_dir(chosen.name))
        write_target(paths, chosen.backend, "active")  # reserved: no one else takes it
    res = resume(chosen.name, yes=yes, dream_dir=dream_dir, cwd=cwd, progress=progress)  # type: ignore[arg-type]
    if res.next_action is not None and getattr(res.next_action, "approval", None):
        with pool_lock(root, pool):
            write_target(paths, chosen.backend, "suspended")  # not taken after all
        return res.with_notes(f"pool {pool!r}: {chosen.name} was not taken (it needs a yes)")
    return res.with_headline(f"pool {pool!r}: acquired {chosen.name} — {res.status}")


def release(
    pool: str,
    name: str,
    *,
    yes: bool = False,
    dream_dir: str | None = None,
    cwd: Path | None = None,
    progress: object | None = None,
) -> ProviderLifecycleResult:
    """Suspend member ``name`` of ``pool`` (it becomes free)."""
    from ..verbs._common import error_result, root_for
    from ..verbs.suspend import suspend

    root = root_for(dream_dir, cwd)
    try:
        _check_pool(pool)
    except UsageError as exc:
        return _bad_pool(exc, root, dream_dir)
    if name not in {m.name for m in members(root, pool)}:
        return error_result(
            UsageError(
                f"{name!r} is not a member of pool {pool!r}",
                next_action=Run(command=commands.pool_status(pool, dream_dir)),
            ),
            name,
            root=root,
            dream_dir=dream_dir,
        )
    with pool_lock(root, pool):
        res = suspend(name, yes=yes, dream_dir=dream_dir, cwd=cwd, progress=progress)  # type: ignore[arg-type]
    return res.with_headline(f"pool {pool!r}: released {name} — {res.status}")


__all__ = ["PoolMember", "PoolStatus", "acquire", "members", "pool_lock", "pool_status", "release"]
