"""Pure argv builders, one module per terraform command.

Each returns the arguments after the binary; nothing here runs a process, so the
builders are tested without terraform. The runner adds the binary and the
non-interactive environment.

Each builder's module loads on first use: the plan the console script starts ahead
of the rest of ``plan`` (``early``) imports ``tfexec.plan`` alone before terraform
starts.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from .apply import apply_args
    from .destroy import DESTROY_PLAN_FILE, destroy_apply_args, destroy_plan_args
    from .init import init_args
    from .plan import plan_args
    from .show import show_args
    from .state_pull import state_pull_args
    from .validate import validate_args
    from .version import version_args

_MODULES = {
    "DESTROY_PLAN_FILE": "destroy",
    "apply_args": "apply",
    "destroy_apply_args": "destroy",
    "destroy_plan_args": "destroy",
    "init_args": "init",
    "plan_args": "plan",
    "show_args": "show",
    "state_pull_args": "state_pull",
    "validate_args": "validate",
    "version_args": "version",
}


def __getattr__(name: str) -> object:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(name)
    from importlib import import_module

    return getattr(import_module(f".{module}", __name__), name)


__all__ = [
    "DESTROY_PLAN_FILE",
    "apply_args",
    "destroy_apply_args",
    "destroy_plan_args",
    "init_args",
    "plan_args",
    "show_args",
    "state_pull_args",
    "validate_args",
    "version_args",
]
