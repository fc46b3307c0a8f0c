"""The user's cache folder for what the engine can compute again at will.

``$DREAMLAKE_CACHE_DIR`` moves it and ``DREAMLAKE_CACHE_DIR=off`` turns every cache
off; otherwise it is ``$XDG_CACHE_HOME/dreamlake`` (``~/.cache/dreamlake``). Nothing
kept here is ever the only copy: deleting the folder costs time, not data.
"""

from __future__ import annotations

import os
from pathlib import Path


def folder(kind: str) -> Path | None:
    """The folder of one kind of cached answer (``hcl``, ``scan``), or ``None``
    when caching is off."""
    env = os.environ.get("DREAMLAKE_CACHE_DIR")
    if env == "off":
        return None
    if env:
        return Path(env) / kind
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dreamlake" / kind
