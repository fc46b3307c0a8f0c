"""The one place that drives Pulumi: the Automation API behind a small seam.

``Automation.open(request)`` selects (or creates) the stack and returns a
``StackSession``: ``preview``, ``preview_refresh`` (the drift check), ``up``, ``refresh``, ``preview_destroy``,
``destroy``, ``cancel``, ``export_stack`` and ``import_stack``. The real
implementation (:class:`PulumiAutomation`) imports ``pulumi.automation`` lazily,
runs the provider's ``__main__.py`` as an inline program (the way ``pulumi up``
runs a Python project), passes the provider's stack config file
(``--config-file``), reports progress from the engine's events (``on_event``) and
never lets the CLI prompt. An adopted stack (``request.main`` None) is selected,
never created, and runs no program of ours.
Exceptions pass through untouched: ``errors.classify`` maps them, in one place.
"""

from __future__ import annotations

import runpy
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .events import on_event

Output = Callable[[str], None]


@dataclass(frozen=True)
class StackRequest:
    """Everything needed to open one provider's stack."""

    stack: str
    project: str
    work_dir: Path
    main: Path | None
    env: dict[str, str]
    cli: Path | None = None
    config_file: Path | None = None


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

    def preview_refresh(self, *, on_output: Output | None = None) -> list[Any]: ...

    def refresh(
        self, *, clear_pending_creates: bool = False, on_output: Output | None = None
    ) -> dict[str, int]: ...

    def preview_destroy(self, *, on_output: Output | None = None) -> PreviewSummary: ...

    def destroy(self, *, on_output: Output | None = None) -> dict[str, int]: ...

    def cancel(self) -> None: ...

    def export_stack(self) -> dict[str, Any]: ...

    def import_stack(self, state: dict[str, Any]) -> None: ...


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


def _progress_events(*, preview: bool, step: str | None = None) -> Callable[[Any], None] | None:
    """An ``on_event`` handler reporting resource steps as progress events, when the
    caller records them. The SDK calls it from its own thread, so the recorder is
    captured here, in the verb's."""
    from ...contract import events
    from .uievents import event_fields

    rec = events.current()
    if rec is None:
        return None

    def on_event(event: Any) -> None:
        mapped = event_fields(event, preview=preview, step=step)
        if mapped is not None:
            rec.emit(mapped[0], **mapped[1])  # type: ignore[arg-type]

    return on_event


def _listeners(
    on_output: Output | None, *, preview: bool, step: str | None = None
) -> Callable[[Any], None] | None:
    """One ``on_event`` callback for both listeners: progress lines for ``on_output``
    and progress events for a recorder (either may be absent)."""
    events = _progress_events(preview=preview, step=step)
    handlers = [h for h in (on_event(on_output), events) if h]
    if not handlers:
        return None
    if len(handlers) == 1:
        return handlers[0]

    def both(event: Any) -> None:
        for h in handlers:
            h(event)

    return both


class _Session:
    """``on_output`` receives progress lines made from engine events (``events``),
    not the CLI's display text."""

    def __init__(self, stack: Any, config_file: Path | None) -> None:
        self._stack = stack
        self._config = {"config_file": str(config_file)} if config_file else {}

    def preview(
        self, *, save_plan: str | None = None, on_output: Output | None = None
    ) -> PreviewSummary:
        res = self._stack.preview(
            plan=save_plan,
            on_event=_listeners(on_output, preview=True),
            color="never",
            diff=False,
            **self._config,
        )
        return PreviewSummary(_changes(res.change_summary))

    def preview_refresh(self, *, on_output: Output | None = None) -> list[Any]:
        """``preview --refresh``: the stack's resources read again from the cloud, in
        memory only (a preview writes no state). Returns the engine events, which
        name what the refresh found changed (the drift check reads them)."""
        seen: list[Any] = []
        listeners = _listeners(on_output, preview=True, step="drift")

        def on_event(event: Any) -> None:
            seen.append(event)
            if listeners is not None:
                listeners(event)

        self._stack.preview(
            refresh=True, on_event=on_event, color="never", diff=False, **self._config
        )
        return seen

    def up(self, *, plan: str | None = None, on_output: Output | None = None) -> UpSummary:
        res = self._stack.up(
            plan=plan,
            on_event=_listeners(on_output, preview=False),
            color="never",
            **self._config,
        )
        outputs = {
            k: getattr(v, "value", v)
            for k, v in dict(res.outputs or {}).items()
            if not getattr(v, "secret", False)
        }
        return UpSummary(_changes(getattr(res.summary, "resource_changes", None)), outputs)

    def refresh(
        self, *, clear_pending_creates: bool = False, on_output: Output | None = None
    ) -> dict[str, int]:
        res = self._stack.refresh(
            clear_pending_creates=clear_pending_creates or None,
            on_event=_listeners(on_output, preview=False, step="refresh"),
            color="never",
            **self._config,
        )
        return _changes(getattr(res.summary, "resource_changes", None))

    def preview_destroy(self, *, on_output: Output | None = None) -> PreviewSummary:
        res = self._stack.preview_destroy(
            on_event=_listeners(on_output, preview=True, step="destroy"),
            color="never",
            **self._config,
        )
        return PreviewSummary(_changes(res.change_summary))

    def destroy(self, *, on_output: Output | None = None) -> dict[str, int]:
        res = self._stack.destroy(
            on_event=_listeners(on_output, preview=False, step="destroy"),
            color="never",
            **self._config,
        )
        return _changes(getattr(res.summary, "resource_changes", None))

    def cancel(self) -> None:
        self._stack.cancel()

    def export_stack(self) -> dict[str, Any]:
        dep = self._stack.export_stack()
        return {"version": dep.version, "deployment": dep.deployment}

    def import_stack(self, state: dict[str, Any]) -> None:
        from pulumi.automation import Deployment

        self._stack.import_stack(
            Deployment(version=state.get("version"), deployment=state.get("deployment"))
        )


class PulumiAutomation:
    """The real Automation API (``pulumi.automation``), imported on first use.

    ``pulumi_command``: a ``PulumiCommand`` to run instead of the one found at
    ``request.cli``."""

    def __init__(self, pulumi_command: Any | None = None) -> None:
        self._command = pulumi_command

    def workspace_options(self, request: StackRequest) -> Any:
        from pulumi import automation as auto

        command = self._command
        if command is None and request.cli is not None:
            # PulumiCommand(root=R) runs R/bin/pulumi and checks its version.
            command = auto.PulumiCommand(root=str(request.cli.parent.parent))
        return auto.LocalWorkspaceOptions(
            work_dir=str(request.work_dir),
            env_vars=dict(request.env),
            pulumi_command=command,
        )

    def open(self, request: StackRequest) -> StackSession:
        from pulumi import automation as auto

        opts = self.workspace_options(request)
        if request.main is None:  # an adopted stack: select it, run no program
            ws = auto.LocalWorkspace(
                work_dir=opts.work_dir, env_vars=opts.env_vars, pulumi_command=opts.pulumi_command
            )
            stack = auto.Stack.select(request.stack, ws)
            return _Session(stack, None)
        stack = auto.create_or_select_stack(
            stack_name=request.stack,
            project_name=request.project,
            program=inline_program(request.main),
            opts=opts,
        )
        return _Session(stack, request.config_file)
