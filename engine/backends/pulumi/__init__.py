"""The Pulumi backend (``BACKEND``): Automation API stacks for the same decisions.

Importing this package does not import ``pulumi``; only ``plan``, ``apply`` and
``destroy`` do. See ``backend`` for the verbs (and ``plan`` as the recovery step),
``automation`` for the one place the Automation API is driven, ``events`` for
progress from engine events, ``errors`` for the one mapping of the SDK's
exceptions, ``project`` for the stack identity, ``state`` for the file-backend
reader behind ``status``, ``scaffold`` for what ``create --backend pulumi``
writes, ``adopt`` for ``create --stack`` and ``drift`` for the drift check
(``preview --refresh``) and its record, which ``observe_state`` reads.
"""

from pathlib import Path

from ..base import InfraState
from .backend import BACKEND, PulumiBackend
from .planrecord import counts_from


def observe_state(provider_dir: Path) -> InfraState:
    """The stack's state as ``status`` reads it: the backend's files, and the live
    drift record beside the plan record."""
    from .drift import with_drift

    return with_drift(BACKEND.observe_state(provider_dir), provider_dir)


__all__ = ["BACKEND", "PulumiBackend", "counts_from", "observe_state"]
