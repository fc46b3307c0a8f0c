"""``dreamlake pool acquire | release | status``: a pool is a set of providers whose
targets a small controller sets (``"pool": NAME`` in each member's provider.json)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from .groups import app
from .invoke import cli_error, emit, progress
from .options import DreamDir, Json, name_problem

pool_app = typer.Typer(
    help="Pools of providers: acquire resumes a free member, release suspends it.",
    no_args_is_help=True,
)
app.add_typer(pool_app, name="pool")

Pool = Annotated[str, typer.Argument(help="The pool's name (the `pool` in provider.json).")]
Yes = Annotated[
    bool,
    typer.Option("-y", "--yes", help="Perform the step even when it is gated (a person's yes)."),
]


def _check(as_json: bool, pool: str, member: str | None = None) -> None:
    """A pool's name (and a member's) is a file name and goes into commands: refuse
    one that is not a name before anything reads or writes with it."""
    bad = name_problem(pool, "pool")
    if bad is None and member is not None:
        bad = name_problem(member)
    if bad is not None:
        argv = ["--json"] if as_json else []
        raise typer.Exit(cli_error(bad, argv, command="dreamlake pool --help"))


@pool_app.command("acquire")
def acquire_cmd(
    pool: Pool, yes: Yes = False, dream_dir: DreamDir = None, as_json: Json = False
) -> None:
    """Resume the free member cheapest to bring back (a kept state first) and name it."""
    from dreamlake.engine.lifecycle.pool import acquire

    _check(as_json, pool)
    emit(acquire(pool, yes=yes, dream_dir=dream_dir, progress=progress(as_json)), as_json)


@pool_app.command("release")
def release_cmd(
    pool: Pool,
    name: Annotated[str, typer.Argument(help="The member to give back (it is suspended).")],
    yes: Yes = False,
    dream_dir: DreamDir = None,
    as_json: Json = False,
) -> None:
    """Suspend a member: it becomes free for the next acquire."""
    from dreamlake.engine.lifecycle.pool import release

    _check(as_json, pool, name)
    emit(release(pool, name, yes=yes, dream_dir=dream_dir, progress=progress(as_json)), as_json)


@pool_app.command("status")
def status_cmd(pool: Pool, dream_dir: DreamDir = None, as_json: Json = False) -> None:
    """The members, their target (suspended = free) and their status."""
    from dreamlake.engine.lifecycle.pool import pool_status

    _check(as_json, pool)
    st = pool_status(pool, dream_dir=dream_dir)
    if as_json:
        sys.stdout.write(st.model_dump_json(by_alias=True, indent=2) + "\n")
        raise typer.Exit(0)
    if not st.members:
        sys.stdout.write(
            f"pool {pool!r} has no members under {st.root}/.dream/providers "
            f'(add "pool": "{pool}" to a provider.json)\n'
        )
        raise typer.Exit(0)
    width = max(len("PROVIDER"), *(len(m.provider) for m in st.members))
    lines = [f"pool {pool}: {st.free} free, {st.taken} taken", ""]
    lines.append(f"{'PROVIDER':<{width}}  {'VENDOR':<6}  {'TARGET':<9}  STATUS")
    for m in st.members:
        free = "  (free)" if m.target == "suspended" else ""
        lines.append(f"{m.provider:<{width}}  {m.vendor:<6}  {m.target:<9}  {m.status}{free}")
    sys.stdout.write("\n".join(lines) + "\n")
    raise typer.Exit(0)
