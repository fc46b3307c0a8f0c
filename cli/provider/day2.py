"""Day-2 verbs on the ``provider`` group: ``destroy``, ``delete`` and ``list``.

    dreamlake provider destroy -n NAME [--yes]   # without --yes: what would go, nothing destroyed
    dreamlake provider delete  -n NAME [--yes]   # asks on a terminal; cancels (rc 0) without one
    dreamlake provider list [--json]             # every provider under the root, one table

Registered on the group by one import in ``cli/main.py``; each command only parses
flags, calls the engine and renders.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

from ..groups import provider_app
from ..invoke import announce, call, emit, progress
from ..options import DreamDir, Json, NameArg, NameOpt, one_name

if TYPE_CHECKING:
    from dreamlake.engine.contract.result import ProviderLifecycleResult


@provider_app.command("destroy")
def destroy_cmd(
    name_arg: NameArg = None,
    name: NameOpt = None,
    yes: Annotated[
        bool,
        typer.Option(
            "-y", "--yes", help="Destroy. Without it: what would go, and nothing destroyed."
        ),
    ] = False,
    dream_dir: DreamDir = None,
    as_json: Json = False,
) -> None:
    """Stop the daemon, then destroy the infrastructure; the scaffold and decisions stay."""
    from dreamlake.engine.verbs.destroy import destroy

    n = one_name(name_arg, name)
    announce("destroy", n, dream_dir, as_json)
    emit(
        call(
            "destroy",
            n,
            dream_dir,
            lambda: destroy(n, yes=yes, dream_dir=dream_dir, progress=progress(as_json)),
        ),
        as_json,
    )


def _confirm(as_json: bool) -> Callable[[str], bool] | None:
    """A yes/no question on a terminal; None (cancel) for an agent or a pipe."""
    if as_json or not sys.stdin.isatty() or not sys.stdout.isatty():
        return None

    def ask(question: str) -> bool:
        return bool(typer.confirm(question, default=False))

    return ask


@provider_app.command("delete")
def delete_cmd(
    name_arg: NameArg = None,
    name: NameOpt = None,
    yes: Annotated[bool, typer.Option("-y", "--yes", help="Delete without asking.")] = False,
    dream_dir: DreamDir = None,
    as_json: Json = False,
) -> None:
    """Remove a provider: its folder and its row. Refuses while infrastructure exists."""
    from dreamlake.engine.verbs.delete import delete

    n = one_name(name_arg, name)
    announce("delete", n, dream_dir, as_json)
    confirm = _confirm(as_json)
    emit(
        call(
            "delete",
            n,
            dream_dir,
            lambda: delete(n, yes=yes, dream_dir=dream_dir, confirm=confirm),
        ),
        as_json,
    )


def _claims(r: ProviderLifecycleResult) -> str:
    if r.claim is None:
        return "?"
    return str(r.claim.live)


def list_table(results: list[ProviderLifecycleResult]) -> str:
    """NAME STATUS VENDOR BACKEND CLAIMS NEXT, one row per provider."""
    head = ["NAME", "STATUS", "VENDOR", "BACKEND", "CLAIMS", "NEXT"]
    rows = [
        [
            r.provider,
            r.status,
            r.vendor or "-",
            r.template.backend if r.template else "-",
            _claims(r),
            r.next_action.command if r.next_action is not None else "-",
        ]
        for r in results
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=False)]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)).rstrip()
        for row in [head, *rows]
    ]
    return "\n".join(lines)


@provider_app.command("list")
def list_cmd(dream_dir: DreamDir = None, as_json: Json = False) -> None:
    """Every provider under the root: derived status, vendor, backend, claims, next."""
    from dreamlake.engine.contract.errors import DreamlakeError
    from dreamlake.engine.verbs.listing import list_failure, list_providers
    from dreamlake.engine.world.paths import find_root

    try:
        results = list_providers(dream_dir=dream_dir)
    except DreamlakeError as exc:  # a broken .dreamrc: an error naming it, not a traceback
        emit(list_failure(exc, dream_dir), as_json)
    if as_json:
        sys.stdout.write(json.dumps([r.to_wire() for r in results], indent=2) + "\n")
        raise typer.Exit(0)
    from ..render import show_path

    root = find_root(dream_dir)
    sys.stdout.write(f"root: {show_path(root.path)} ({root.reason})\n")
    if not results:
        from dreamlake.engine.contract import commands

        sys.stdout.write(
            f"no providers under {show_path(root.providers)} yet\n"
            f"next: {commands.create('my-provider', 'local', dream_dir)}\n"
        )
        raise typer.Exit(0)
    sys.stdout.write(list_table(results) + "\n")
    degraded = sorted({d for r in results for d in r.degraded or []})
    if "no-lakeshore" in degraded:
        sys.stdout.write("degraded: no-lakeshore (control plane not reachable, claims unknown)\n")
    raise typer.Exit(0)
