"""``Backend``: the interface every backend satisfies, as a ``typing.Protocol``.

Apart from ``base`` (whose records and readers the verbs use at run time) because a
``Protocol`` needs ``typing`` at run time, and the verbs name the interface in
annotations only: ``base.Backend`` loads this module where it is asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pathlib import Path

    from .base import ApplyOutcome, DestroyOutcome, InfraState, PlanOutcome, Progress


class Backend(Protocol):
    name: str

    def observe_state(self, provider_dir: Path) -> InfraState: ...

    def plan(self, provider_dir: Path, *, progress: Progress | None = None) -> PlanOutcome: ...

    def apply(self, provider_dir: Path, *, progress: Progress | None = None) -> ApplyOutcome: ...

    def outputs(self, provider_dir: Path) -> dict[str, Any]: ...

    def destroy(
        self, provider_dir: Path, *, yes: bool, progress: Progress | None = None
    ) -> DestroyOutcome: ...


__all__ = ["Backend"]
