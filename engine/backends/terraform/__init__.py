"""The terraform backend. ``BACKEND`` satisfies ``engine.backends.base.Backend``.

Modules, one role each: ``runner`` (the one subprocess boundary), ``tfexec``
(pure argv builders, one per command), ``uijson`` / ``planjson`` (machine output
readers), ``statefile`` / ``lockinfo`` / ``planfile`` (files on disk),
``state`` (``observe_state``), ``diagnostics`` (variable errors → blocking),
``initmark`` (whether ``init`` must run: what it read last time), ``hcltext`` (HCL
read as text), ``backend`` (plan / apply), ``started`` (the runner's runs started
without waiting, a leaf), ``early`` (the plan the console script starts ahead of
the rest of ``plan``, from the record the last plan left), ``early_apply`` (the
apply it starts ahead of the rest of ``apply --yes``, once every check before an
apply has passed).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from typing import Any

_LAZY = {
    "observe_state": ".state",
    "StateLocked": ".backend",
    "TerraformBackend": ".backend",
    "TerraformFailed": ".runner",
    "terraform_binary": ".runner",
}


def __getattr__(name: str) -> Any:
    """Everything loads on first use: ``status`` reads files only (no runner), and the
    plan ``plan`` starts ahead (``early``) needs neither the state reader nor the
    backend to start."""
    from importlib import import_module

    if name == "BACKEND":
        backend = import_module(".backend", __name__).TerraformBackend()
        globals()["BACKEND"] = backend
        return backend
    if name in _LAZY:
        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(name)


__all__ = [
    "BACKEND",
    "StateLocked",
    "TerraformBackend",
    "TerraformFailed",
    "observe_state",
    "terraform_binary",
]
