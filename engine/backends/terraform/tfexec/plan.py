"""``terraform plan`` with a saved plan file, machine-readable output (``-json``,
since 0.15.3) and ``-detailed-exitcode`` (0 no changes, 1 error, 2 changes);
``refresh_only`` makes the drift check's plan (``-refresh-only``, since 0.15.4)."""

from __future__ import annotations

from ..planname import PLAN_FILE

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from collections.abc import Sequence


def plan_args(
    *,
    out: str = PLAN_FILE,
    var_files: Sequence[str] = (),
    lock_timeout: str = "0s",
    refresh: bool = True,
    destroy: bool = False,
    refresh_only: bool = False,
) -> list[str]:
    args = [
        "plan",
        "-input=false",
        "-no-color",
        "-json",
        "-detailed-exitcode",
        f"-lock-timeout={lock_timeout}",
        f"-out={out}",
    ]
    if not refresh:
        args.append("-refresh=false")
    if destroy:
        args.append("-destroy")
    if refresh_only:  # what the world holds against the state; never written (no apply)
        args.append("-refresh-only")
    args += [f"-var-file={f}" for f in var_files]
    return args
