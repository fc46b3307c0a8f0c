"""dreamlake.engine — the core. The verbs return the same pydantic results the CLI prints.

    from dreamlake.engine import create, status
    result = create("py-lab", "local", dream_dir="/tmp/proj")
    if result.status == "needs_input":
        for b in result.blocking or []:
            print(b.key, b.file, b.line, b.why)
    print(result.to_json())

Heavy backends (pulumi, fabric, cloud SDKs) load only inside the verb that needs them.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from typing import Any

    from .contract.errors import DreamlakeError
    from .contract.result import (
        Blocking,
        Claim,
        DriftedResource,
        EditThenContinue,
        PlanCounts,
        ProviderLifecycleResult,
        ProviderStatus,
        Run,
        Shell,
        json_schema,
    )
    from .verbs.apply import apply
    from .verbs.connect import connect
    from .verbs.create import create
    from .verbs.delete import delete
    from .verbs.destroy import destroy
    from .verbs.drift import drift
    from .verbs.listing import list_providers
    from .verbs.plan import plan
    from .verbs.reconcile import reconcile
    from .verbs.resume import resume
    from .verbs.status import status
    from .verbs.suspend import suspend
    from .verbs.watch import watch
    from .world.vendors import supports_stateful_lifecycle

__all__ = [
    "Blocking",
    "Claim",
    "DreamlakeError",
    "DriftedResource",
    "EditThenContinue",
    "PlanCounts",
    "ProviderLifecycleResult",
    "ProviderStatus",
    "Run",
    "Shell",
    "apply",
    "connect",
    "create",
    "delete",
    "destroy",
    "drift",
    "json_schema",
    "list_providers",
    "plan",
    "reconcile",
    "resume",
    "status",
    "supports_stateful_lifecycle",
    "suspend",
    "watch",
]

_VERBS = {
    "create",
    "status",
    "plan",
    "apply",
    "connect",
    "destroy",
    "delete",
    "suspend",
    "resume",
    "reconcile",
    "drift",
    "watch",
}
_VERB_MODULES = {"list_providers": "listing"}


_LAZY = {
    "DreamlakeError": ".contract.errors",
    "supports_stateful_lifecycle": ".world.vendors",
    **{
        n: ".contract.result"
        for n in (
            "Blocking",
            "Claim",
            "DriftedResource",
            "EditThenContinue",
            "PlanCounts",
            "ProviderLifecycleResult",
            "ProviderStatus",
            "Run",
            "Shell",
            "json_schema",
        )
    },
}


def __getattr__(name: str) -> Any:
    """Names load on first use, so importing ``dreamlake.engine.contract.errors`` (as the
    daemon does) does not pay for pydantic."""
    from importlib import import_module

    if name in _VERBS:
        return getattr(import_module(f".verbs.{name}", __name__), name)
    if name in _VERB_MODULES:
        return getattr(import_module(f".verbs.{_VERB_MODULES[name]}", __name__), name)
    if name in _LAZY:
        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(name)
