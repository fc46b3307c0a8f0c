"""Where the fixture files (real terraform and pulumi state, plan, stream and lock
files) are.

* ``OWN``: the project's own, made by the real binaries with
  ``tests/fixtures/make_terraform.py`` and checked in: always there.
* ``UPSTREAM``: the shared corpus of files written by Terraform's and Pulumi's own
  authors, an extra that runs when ``$DREAMLAKE_FIXTURES`` names it or a
  ``shared/fixtures`` folder sits beside this checkout; ``None`` otherwise.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
OWN = REPO / "tests" / "fixtures"
OWN_TF = OWN / "terraform"


def upstream_root() -> Path | None:
    env = os.environ.get("DREAMLAKE_FIXTURES")
    if env:
        return Path(env)
    sibling = REPO.parent / "shared" / "fixtures"
    return sibling if sibling.is_dir() else None


UPSTREAM = upstream_root()
UPSTREAM_TF = UPSTREAM / "terraform" if UPSTREAM and (UPSTREAM / "terraform").is_dir() else None
UPSTREAM_PULUMI = UPSTREAM / "pulumi" if UPSTREAM and (UPSTREAM / "pulumi").is_dir() else None


def terraform_corpora() -> list[Path]:
    """Every terraform fixture tree present: the project's own first."""
    return [OWN_TF, *([UPSTREAM_TF] if UPSTREAM_TF else [])]


def own_manifest() -> dict[str, Any]:
    """The facts make_terraform.py recorded about the files it made."""
    data: dict[str, Any] = json.loads((OWN_TF / "MANIFEST.json").read_text())
    return data


def cases(own: list[tuple[Any, ...]], upstream: list[tuple[Any, ...]]) -> list[Any]:
    """Rows for a parametrized test: ``(root, *row)`` for the project's own files,
    and for the upstream corpus's when it is present (never an empty list, so a
    missing corpus is not a skip but fewer cases)."""
    import pytest

    out = [pytest.param(OWN_TF, *r, id=f"own-{r[0]}") for r in own]
    if UPSTREAM_TF:
        out += [pytest.param(UPSTREAM_TF, *r, id=f"upstream-{r[0]}") for r in upstream]
    return out
