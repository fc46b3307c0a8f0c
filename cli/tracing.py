"""A command as one OpenTelemetry span, when traces are configured
(``engine/settings/tracing.py``): the span around the command, its trace context on
every request the control plane's client makes, and what is buffered exported
before the process ends. Unconfigured, the command just runs."""

from __future__ import annotations

from dreamlake.engine.settings import tracing

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeVar

    T = TypeVar("T")


def traced(program: str, args: list[str], run: Callable[[], T]) -> T:
    """``run()`` inside the span of ``program args`` (see the module's docstring)."""
    if not tracing.configured():
        return run()
    from dreamlake.controlplane.client import HEADER_HOOKS

    if tracing.inject not in HEADER_HOOKS:
        HEADER_HOOKS.append(tracing.inject)
    try:
        with tracing.span(tracing.command_name(program, args), service=program):
            return run()
    finally:
        tracing.flush()
