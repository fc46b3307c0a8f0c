"""``terraform init`` (no ``-lock-timeout``: 1.0 does not accept it on init)."""

from __future__ import annotations

from collections.abc import Sequence


def init_args(
    *,
    backend: bool = True,
    upgrade: bool = False,
    plugin_dirs: Sequence[str] = (),
) -> list[str]:
    args = ["init", "-input=false", "-no-color"]
    if not backend:
        args.append("-backend=false")
    if upgrade:
        args.append("-upgrade")
    args += [f"-plugin-dir={d}" for d in plugin_dirs]
    return args
