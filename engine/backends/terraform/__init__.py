"""The terraform backend. ``BACKEND`` satisfies ``engine.backends.base.Backend``.

Modules, one role each: ``runner`` (the one subprocess boundary), ``tfexec``
(pure argv builders, one per command), ``uijson`` / ``planjson`` (machine output
readers), ``statefile`` / ``lockinfo`` / ``planfile`` (files on disk),
``state`` (``observe_state``), ``diagnostics`` (variable errors → blocking),
``backend`` (plan / apply).
"""

from .backend import StateLocked, TerraformBackend
from .runner import TerraformFailed, terraform_binary
from .state import observe_state

BACKEND = TerraformBackend()

__all__ = [
    "BACKEND",
    "StateLocked",
    "TerraformBackend",
    "TerraformFailed",
    "observe_state",
    "terraform_binary",
]
