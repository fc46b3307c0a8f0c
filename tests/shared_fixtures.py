"""Where the shared fixture files (real terraform and pulumi state, plan and lock
files) are: ``$DREAMLAKE_FIXTURES``, else ``shared/fixtures`` beside this checkout."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def fixtures_root() -> Path:
    env = os.environ.get("DREAMLAKE_FIXTURES")
    if env:
        return Path(env)
    for candidate in (REPO.parent / "shared" / "fixtures", Path("/work/shared/fixtures")):
        if candidate.is_dir():
            return candidate
    return REPO.parent / "shared" / "fixtures"


FIXTURES = fixtures_root()
