"""The ``dreamlake`` console script: ``provider status`` on a hot path, everything
else through the full typer CLI (``cli/main.py``).

Agents run ``dreamlake provider status -n NAME --json`` in a loop, and importing
typer (which imports pydantic) costs more than the rest of that run. So the plain,
well-formed spellings of that one command are recognised here and run without it;
the engine's results are lean models (``engine/contract/wire.py``) and print the same bytes
either way. ``provider plan --json`` and ``provider apply [--yes] --json``, which
an agent runs in its loop too, take the same short way to their verb; ``plan``
starts terraform's plan before the rest is imported (``early``). A plain
``[command ...] --help`` is printed from the help cache
(``helpcache.py``: typer renders it once per version of the code and width).
Anything else — another command, a flag this parser does not know, a repeated or
missing option — goes to the full CLI, which answers it exactly as before.
"""

from __future__ import annotations

import os
import sys

# typing.TYPE_CHECKING without importing typing: nothing the plan imports before
# starting terraform's plan (``early``) imports it, about 3 ms before that start.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from dreamlake.engine.contract.result import ProviderLifecycleResult


def status_request(args: list[str]) -> tuple[str, str | None, bool] | None:
    """``(name, dream_dir, as_json)`` for a plain ``provider status`` command line,
    else None (the full CLI handles it)."""
    if args[:2] != ["provider", "status"]:
        return None
    name: str | None = None
    dream_dir: str | None = None
    as_json = False
    rest = args[2:]
    i = 0
    while i < len(rest):
        tok = rest[i]
        if tok == "--json" and not as_json:
            as_json = True
        elif tok in ("-n", "--name") and name is None and i + 1 < len(rest):
            name = rest[i + 1]
            i += 1
        elif tok.startswith("--name=") and name is None:
            name = tok.removeprefix("--name=")
        elif tok == "--dream-dir" and dream_dir is None and i + 1 < len(rest):
            dream_dir = rest[i + 1]
            i += 1
        elif tok.startswith("--dream-dir=") and dream_dir is None:
            dream_dir = tok.removeprefix("--dream-dir=")
        elif not tok.startswith("-") and name is None:  # the name as an argument
            name = tok
        else:
            return None
        i += 1
    if name is None or name.startswith("-") or (dream_dir or "x").startswith("-"):
        return None  # the full CLI says what is wrong, as it always did
    return name, dream_dir, as_json


def lifecycle_request(args: list[str]) -> tuple[str, str, str | None, bool] | None:
    """``(verb, name, dream_dir, yes)`` for a plain ``provider plan --json`` or
    ``provider apply [--yes] --json`` command line (an agent's loop), else None.
    Prose and ``--events`` (a live view, an event sink) take the full CLI."""
    if args[:1] != ["provider"] or args[1:2] not in (["plan"], ["apply"]):
        return None
    verb = args[1]
    rest = list(args[2:])
    yes = False
    if verb == "apply":
        flags = [t for t in rest if t in ("-y", "--yes")]
        if len(flags) > 1:
            return None
        yes = bool(flags)
        rest = [t for t in rest if t not in ("-y", "--yes")]
    req = status_request(["provider", "status", *rest])
    if req is None or not req[2]:
        return None
    return verb, req[0], req[1], yes


# Traces need an OTLP endpoint (``settings.tracing.ENDPOINTS``, a test holds the two
# the same): without one the tracing modules are not imported before terraform's start.
TRACE_ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    # The console script's plan / apply ends the process once its document is printed.
    ends = argv is None and lifecycle_request(args) is not None
    if any(os.environ.get(name) for name in TRACE_ENDPOINTS):
        from .tracing import traced  # standard library only unless traces are configured

        rc = traced("dreamlake", args, lambda: _main(args, ends))
    else:
        rc = _main(args, ends)
    if ends:
        end(rc)
    return rc


def end(rc: int) -> None:
    """End the process as the interpreter would (threads joined, atexit handlers
    run, the streams flushed, exit status 120 where a flush fails) without tearing
    down every module first: about 25 ms of an ``apply`` that ends when terraform
    does. Returns only on a Python that does not have the way to join threads it
    uses (the caller then returns as before)."""
    import atexit

    threading = sys.modules.get("threading")
    join = getattr(threading, "_shutdown", None) if threading is not None else (lambda: None)
    if join is None:
        return
    join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            rc = 120
    os._exit(rc & 0xFF)


def _main(args: list[str], ends: bool = False) -> int:
    req = status_request(args)
    if req is None:
        act = lifecycle_request(args)
        if act is not None:
            return _lifecycle(args, *act, ends=ends)
        from .helpcache import help_request, show_help

        if help_request(args):
            return show_help(args, _full)
        return _full(args)
    name, dream_dir, as_json = req
    from .conventions import text_streams

    text_streams()
    if os.environ.get("DREAMLAKE_LOG"):
        from .conventions import setup_logging

        setup_logging(False)
    # A status run holds little and ends in milliseconds: the cycle collector's
    # passes over every object its imports create free nothing (about 7 % of a run).
    import gc

    collecting = gc.isenabled()
    gc.disable()
    try:
        from dreamlake.engine.verbs.status import status

        from .run import announce, call, write

        announce("status", name, dream_dir, as_json)
        return write(
            call("status", name, dream_dir, lambda: status(name, dream_dir=dream_dir)), as_json
        )
    except KeyboardInterrupt:
        from .invoke import interrupted

        return interrupted(args)
    finally:
        if collecting:
            gc.enable()  # called in-process (tests, embedders): leave it as it was


def _lifecycle(
    args: list[str], verb: str, name: str, dream_dir: str | None, yes: bool, *, ends: bool = False
) -> int:
    """``plan`` / ``apply`` with ``--json``, as the full CLI runs them (no progress:
    the one document on stdout), without importing typer. ``ends``: the process
    ends right after (:func:`end`), with the collector still off."""
    # As for status: the collector's passes over what the imports create free
    # nothing in a run that ends when terraform does (from the first import on, so
    # none runs before terraform's plan starts).
    import gc

    collecting = gc.isenabled()
    gc.disable()
    try:
        return _run_verb(args, verb, name, dream_dir, yes)
    finally:
        # Called in-process (tests, embedders): leave it as it was. Not where the
        # process ends next: the first allocation after enabling it would pass over
        # every object the run made (2-3 ms of CPU after the document is printed).
        if collecting and not ends:
            gc.enable()


def _run_verb(args: list[str], verb: str, name: str, dream_dir: str | None, yes: bool) -> int:
    stop = True
    if os.environ.get("DREAMLAKE_LOG"):  # before the start: its run is logged too
        from .conventions import setup_logging

        setup_logging(False)
    try:
        if verb == "plan":
            # terraform's plan starts now, on the other core, while the rest is imported
            # and the provider observed; the backend takes it over or stops it.
            from dreamlake.engine.backends.terraform.early import start_plan

            start_plan(name, dream_dir)
        elif yes:  # terraform's apply, only where every check before it passes (early_apply)
            from dreamlake.engine.backends.terraform.early_apply import start_apply

            start_apply(name, dream_dir)
        # After terraform's start: nothing here is needed to start it.
        from .conventions import text_streams

        text_streams()
        from .run import call, write

        def act() -> ProviderLifecycleResult:
            if verb == "plan":
                from dreamlake.engine.verbs.plan import plan

                return plan(name, dream_dir=dream_dir)
            from dreamlake.engine.verbs.apply import apply

            return apply(name, yes=yes, dream_dir=dream_dir)

        return write(call(verb, name, dream_dir, act), True)
    except KeyboardInterrupt:
        stop = False  # terraform had the Ctrl-C too
        from .invoke import interrupted

        return interrupted(args)
    finally:
        _settle_ahead(stop)


def _settle_ahead(stop: bool) -> None:
    """What was started ahead and not taken when the command ends (the run ended
    before the verb took it, or a Ctrl-C came before it did): a plan is stopped and
    its file removed (``stop=False``: waited for, as a Ctrl-C reached it already),
    an apply is waited for, never stopped, its record kept after a Ctrl-C."""
    plan = sys.modules.get("dreamlake.engine.backends.terraform.early")
    if plan is not None:
        plan.settle(stop=stop)
    apply = sys.modules.get("dreamlake.engine.backends.terraform.early_apply")
    if apply is not None:
        apply.settle_all(interrupted=not stop)


def _full(args: list[str]) -> int:
    from .main import main as full

    return full(args)


if __name__ == "__main__":  # python -m dreamlake.cli.entry
    raise SystemExit(main())
