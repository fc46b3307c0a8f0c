"""The one place that drives Pulumi: the Automation API behind a small seam.

``Automation.open(request)`` selects (or creates) the stack and returns a
``StackSession`` with ``preview`` and ``up``; the real implementation
(:class:`PulumiAutomation`) imports ``pulumi.automation`` lazily, runs the
provider's ``__main__.py`` as an inline program (the way ``pulumi up`` runs a
Python project) and never lets the CLI prompt. Tests swap in a double.
Exceptions pass through untouched: ``errors.translate`` maps them, in one place.
"""

from __future__ import annotations

import runpy
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

Output = Callable[[str], None]


@dataclass(frozen=True)
class StackRequest:
    """Everything needed to open one provider's stack."""

    stack: str
    project: str
    work_dir: Path
    main: Path
    env: dict[str, str]
    cli: Path | None = None


@dataclass(frozen=True)
class PreviewSummary:
    changes: dict[str, int]


@dataclass(frozen=True)
class UpSummary:
    changes: dict[str, int]
    outputs: dict[str, Any] = field(default_factory=dict)


class StackSession(Protocol):
    def preview(
        self, *, save_plan: str | None = None, on_output: Output | None = None
    ) -> PreviewSummary: ...

    def up(self, *, plan: str | None = None, on_output: Output | None = None) -> UpSummary: ...


class Automation(Protocol):
    def open(self, request: StackRequest) -> StackSession: ...


def inline_program(main: Path) -> Callable[[], None]:
    """Run ``main`` as ``__main__`` with its directory importable, like ``pulumi up``."""

    def run() -> None:
        folder = str(main.parent)
        added = folder not in sys.path
        if added:
            sys.path.insert(0, folder)
        try:
            runpy.run_path(str(main), run_name="__main__")
        finally:
            if added and folder in sys.path:
                sys.path.remove(folder)

    run.__name__ = f"dreamlake_{main.parent.parent.name}"
    return run


def _changes(summary: Any) -> dict[str, int]:
    return {str(getattr(k, "value", k)): int(v) for k, v in dict(summary or {}).items()}


def _progress_events(*, preview: bool) -> Callable[[Any], None] | None:
    """An ``on_event`` handler reporting resource steps as progress events, when the
    caller records them. The SDK calls it from its own thread, so the recorder is
    captured here, in the verb's."""
    from ... import events
    from .uievents import event_fields

    rec = events.current()
    if rec is None:
        return None

    def on_event(event: Any) -> None:
        mapped = event_fields(event, preview=preview)
        if mapped is not None:
            rec.emit(mapped[0], **mapped[1])  # type: ignore[arg-type]

    return on_event


class _Session:
    def __init__(self, stack: Any) -> None:
        self._stack = stack

    def preview(
        self, *, save_plan: str | None = None, on_output: Output | None = None
    ) -> PreviewSummary:
        res = self._stack.preview(
            plan=save_plan,
            on_output=on_output,
            on_event=_progress_events(preview=True),
            color="never",
            diff=False,
        )
        return PreviewSummary(_changes(res.change_summary))

    def up(self, *, plan: str | None = None, on_output: Output | None = None) -> UpSummary:
        res = self._stack.up(
            plan=plan, on_output=on_output, on_event=_progress_events(preview=False), color="never"
        )
        outputs = {
            k: getattr(v, "value", v)
            for k, v in dict(res.outputs or {}).items()
            if not getattr(v, "secret", False)
        }
        return UpSummary(_changes(getattr(res.summary, "resource_changes", None)), outputs)


class PulumiAutomation:
    """The real Automation API (``pulumi.automation``), imported on first use.

    ``pulumi_command``: a ``PulumiCommand`` to run instead of the one found at
    ``request.cli`` (how tests put a double in place of the CLI binary)."""

    def __init__(self, pulumi_command: Any | None = None) -> None:
        self._command = pulumi_command

    def workspace_options(self, request: StackRequest) -> Any:
        from pulumi import automation as auto

        command = self._command
        if command is None and request.cli is not None:
            # PulumiCommand(root=R) runs R/bin/pulumi; it checks the version, too.
            command = auto.PulumiCommand(root=str(request.cli.parent.parent))
        return auto.LocalWorkspaceOptions(
            work_dir=str(request.work_dir),
            env_vars=dict(request.env),
            pulumi_command=command,
        )

    def open(self, request: StackRequest) -> StackSession:
        from pulumi import automation as auto

        stack = auto.create_or_select_stack(
            stack_name=request.stack,
            project_name=request.project,
            program=inline_program(request.main),
            opts=self.workspace_options(request),
        )
        return _Session(stack)
