"""Running one engine verb for the command line, without typer: call it, print the
root first, print the result, give the exit code. Shared by the full CLI
(``cli/main.py``) and the hot path (``cli/entry.py``), so both print the same bytes."""

from __future__ import annotations

import sys
from collections.abc import Callable

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from dreamlake.engine.contract.result import ProviderLifecycleResult


def call(
    verb: str, name: str, dream_dir: str | None, fn: Callable[[], ProviderLifecycleResult]
) -> ProviderLifecycleResult:
    """Run an engine verb; an unexpected failure still becomes one error result, in
    the verbs' own failure shape (its next action repeats --dream-dir)."""
    try:
        return fn()
    except Exception as exc:  # the engine's own errors are results already
        from dreamlake.engine.contract.errors import DreamlakeError
        from dreamlake.engine.verbs._common import error_result
        from dreamlake.engine.world.paths import find_root

        failure = DreamlakeError(
            f"{verb} failed unexpectedly: {type(exc).__name__}: {exc}", kind="internal"
        )
        return error_result(failure, name, root=find_root(dream_dir), dream_dir=dream_dir)


def write(result: ProviderLifecycleResult, as_json: bool) -> int:
    """Print the result (one JSON document, or prose) and return its exit code. In
    prose an error goes to stderr, as a terminal user expects (stdout keeps results:
    ``--json`` prints every document there, errors included)."""
    if as_json:
        sys.stdout.write(result.to_json() + "\n")
        sys.stdout.flush()
        return result.exit_code
    from .render import render

    out = sys.stderr if result.status == "error" else sys.stdout
    sys.stdout.flush()  # the header printed before, then the error
    out.write(render(result) + "\n")
    out.flush()
    return result.exit_code


def announce(verb: str, name: str, dream_dir: str | None, as_json: bool) -> None:
    """The chosen root, printed before anything is written."""
    if as_json:
        return
    from dreamlake.engine.world.paths import find_root

    from .render import header

    root = find_root(dream_dir)
    sys.stdout.write(header(verb, name, root.path, root.reason) + "\n")
    sys.stdout.flush()
