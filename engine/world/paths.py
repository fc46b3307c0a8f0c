"""Where ``.dream/`` lives and what a provider directory holds.

``.dream/`` goes beside the nearest ``.dreamrc`` walking up from cwd; with none,
beside cwd. ``--dream-dir`` overrides (it names the folder that holds ``.dream/``,
or a folder literally named ``.dream``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from ..contract.errors import UsageError
from ..settings.records import record

NAME_MAX = 63  # as the control plane's provider names (controlplane/names.py)
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
DREAM = ".dream"
DREAMRC = ".dreamrc"


@record()
class Root:
    """The folder holding ``.dream/`` and why it was chosen."""

    path: Path
    reason: str  # ".dreamrc", "cwd" or "--dream-dir"

    @property
    def dream(self) -> Path:
        return self.path / DREAM

    @property
    def providers(self) -> Path:
        return self.dream / "providers"

    def provider_dir(self, name: str) -> Path:
        return self.providers / name

    def known_providers(self) -> list[str]:
        try:
            return sorted(
                p.name for p in self.providers.iterdir() if (p / "provider.json").is_file()
            )
        except OSError:
            return []


def dreamrc_above(start: Path | None = None) -> Path | None:
    """The nearest ``.dreamrc`` walking up from ``start`` (cwd by default)."""
    here = (start or Path.cwd()).absolute()
    for d in (here, *here.parents):
        if (d / DREAMRC).is_file():
            return d / DREAMRC
    return None


def nearest_dreamrc(
    start: Path | None = None, env: Mapping[str, str] | None = None, *, walk: bool = True
) -> Path | None:
    """The ``.dreamrc`` a run reads its settings from: ``$DREAMRC`` (None when it names
    no file), else the nearest one walking up from ``start``, else ``~/.dreamrc``."""
    env = os.environ if env is None else env
    named = env.get("DREAMRC", "").strip()
    if named:
        p = Path(named).expanduser()
        return p if p.is_file() else None
    found = dreamrc_above(start) if walk else None
    if found is not None:
        return found
    home = Path(env.get("HOME") or os.path.expanduser("~")) / DREAMRC
    return home if home.is_file() else None


def find_root(dream_dir: str | Path | None = None, cwd: Path | None = None) -> Root:
    if dream_dir is not None:
        p = Path(dream_dir).expanduser().absolute()
        if p.name == DREAM:
            p = p.parent
        return Root(p, "--dream-dir")
    here = (cwd or Path.cwd()).absolute()
    found = dreamrc_above(here)
    if found is not None:
        return Root(found.parent, DREAMRC)
    return Root(here, "cwd")


def check_name(name: str) -> str:
    if not NAME_RE.fullmatch(name or ""):
        shown = repr(name[:40]) + (f"… ({len(name)} characters)" if len(name or "") > 40 else "")
        raise UsageError(
            f"invalid provider name {shown}: names must match ^[a-z0-9][a-z0-9-]*$ "
            f"(lowercase letters, digits and dashes, not starting with a dash), at most "
            f"{NAME_MAX} characters"
        )
    return name


@record()
class ProviderPaths:
    """The files of one provider directory."""

    dir: Path

    @property
    def name(self) -> str:
        return self.dir.name

    @property
    def provider_json(self) -> Path:
        return self.dir / "provider.json"

    @property
    def terraform(self) -> Path:
        return self.dir / "terraform"

    @property
    def pulumi(self) -> Path:
        return self.dir / "pulumi"

    @property
    def adapt(self) -> Path:
        return self.dir / "ADAPT.md"

    @property
    def adopt_json(self) -> Path:
        return self.dir / "adopt.json"
