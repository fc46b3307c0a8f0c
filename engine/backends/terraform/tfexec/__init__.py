"""Pure argv builders, one module per terraform command.

Each returns the arguments after the binary; nothing here runs a process, so the
builders are tested without terraform. The runner adds the binary and the
non-interactive environment.
"""

from .apply import apply_args
from .destroy import DESTROY_PLAN_FILE, destroy_apply_args, destroy_plan_args
from .init import init_args
from .plan import plan_args
from .show import show_args
from .state_pull import state_pull_args
from .validate import validate_args
from .version import version_args

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
