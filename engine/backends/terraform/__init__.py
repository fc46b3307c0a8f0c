"""The terraform backend. ``BACKEND`` satisfies ``engine.backends.base.Backend``.

Modules, one role each: ``runner`` (the one subprocess boundary), ``tfexec``
(pure argv builders, one per command), ``uijson`` / ``planjson`` (machine output
readers), ``statefile`` / ``lockinfo`` / ``planfile`` (files on disk),
``state`` (``observe_state``), ``diagnostics`` (variable errors → blocking),
``initmark`` (whether ``init`` must run: what it read last time), ``hcltext`` (HCL
read as text), ``backend`` (plan / apply).
"""

from typing import Any

from .state import observe_state

_LAZY = {
    "StateLocked": ".backend",
    "TerraformBackend": ".backend",
    "TerraformFailed": ".runner",
    "terraform_binary": ".runner",
}


def __getattr__(name: str) -> Any:
    """The runner and the verbs load on first use: ``status`` reads files only."""
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
