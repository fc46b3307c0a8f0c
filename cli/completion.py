"""Shell completion of option values: the choices a flag takes, the providers under
the root and in ``.dreamrc``, the namespaces this machine knows.

Each completer is called by the shell on every <TAB>: it reads only local files
(no control-plane round trip), never raises (a broken file completes nothing) and
answers the values that start with what was typed. ``--show-completion SHELL``
takes the shell by name (:func:`completion_script`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")
BACKENDS = ("terraform", "pulumi")


def _starting(values: Iterable[str], incomplete: str) -> list[str]:
    return sorted({v for v in values if v.startswith(incomplete)})


def vendors(incomplete: str) -> list[str]:
    """``--provider``: the vendor templates."""
    try:
        from dreamlake.engine.world.vendors import known_vendors

        return _starting(known_vendors(), incomplete)
    except Exception:
        return []


def backends(incomplete: str) -> list[str]:
    """``--backend``."""
    return _starting(BACKENDS, incomplete)


def _dream_dir(ctx: Any) -> str | None:
    value = (getattr(ctx, "params", None) or {}).get("dream_dir")
    return value if isinstance(value, str) else None


def provider_names(ctx: Any, incomplete: str) -> list[str]:
    """A provider's name: those under the root, and the ``.dreamrc``'s own providers
    and modes (the file only; never a server pull)."""
    names: list[str] = []
    try:
        from dreamlake.engine.world.paths import find_root

        names += find_root(_dream_dir(ctx)).known_providers()
    except Exception:
        pass
    try:
        from dreamlake.engine.settings.dreamrc import load_dreamrc

        rc = load_dreamrc(cwd=Path.cwd(), pull=False)
        names += [*rc.providers, *rc.modes]
    except Exception:
        pass
    return _starting(names, incomplete)


def namespaces(incomplete: str) -> list[str]:
    """``--namespace``: ``LAKESHORE_NAMESPACE``, the ``.dreamrc``'s, the default, and
    those of earlier pulls cached on this machine."""
    found = ["default"]
    if os.environ.get("LAKESHORE_NAMESPACE"):
        found.append(os.environ["LAKESHORE_NAMESPACE"].strip())
    try:
        from dreamlake.engine.world import lakeshore

        found.append(lakeshore.resolve_control_plane(Path.cwd(), strict=False).namespace)
    except Exception:
        pass
    try:
        from dreamlake.engine.settings.dreamrc import cache_path

        folder = cache_path("default").parent
        found += [p.stem for p in folder.glob("*.json")]
    except Exception:
        pass
    return _starting([f for f in found if f], incomplete)


def completion_script(argv: list[str], prog: str) -> int | None:
    """``--show-completion SHELL``: the script for the shell named (typer's flag takes
    no value and detects the shell it runs under instead). The exit code, or None
    when ``argv`` does not name a shell after the flag."""
    flag = "--show-completion"
    if flag not in argv:
        return None
    i = argv.index(flag)
    shell = argv[i + 1] if i + 1 < len(argv) else None
    if shell not in SHELLS:
        return None  # typer's own: the shell it detects
    from typer._completion_shared import get_completion_script

    var = f"_{prog.replace('-', '_').upper()}_COMPLETE"
    sys.stdout.write(get_completion_script(prog_name=prog, complete_var=var, shell=shell) + "\n")
    return 0
