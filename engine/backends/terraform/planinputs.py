"""What a plan reads as its configuration and variables, by the names of its files.

A leaf module: the plan record hashes these files (``planfile``), and an apply
started ahead (``early_apply``) hashes the same files again before the engine is
imported, to see that none changed since that plan. That apply starts terraform
before any ``pathlib`` import (``re``, ``enum``, ``functools``, ``urllib`` and more),
so the names are found with ``os`` alone (:func:`input_names`); :func:`input_files`
gives them as the ``Path`` objects the plan record reads.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from pathlib import Path

INPUT_SUFFIXES = (".tf", ".tf.json", ".tfvars", ".tfvars.json")
LOCK_HCL = ".terraform.lock.hcl"


def input_names(tf_dir: str | os.PathLike[str]) -> list[str]:
    """Every file terraform reads as configuration or variables, skipping
    ``.terraform/``: its name relative to ``tf_dir``, ``/``-separated, in the order of
    a sorted walk."""
    top = os.fspath(tf_dir)
    out: list[str] = []
    for root, dirs, files in os.walk(top):
        dirs[:] = sorted(
            d for d in dirs if d != ".terraform" and not d.startswith("terraform.tfstate")
        )
        rel = os.path.relpath(root, top).replace(os.sep, "/")
        for name in sorted(files):
            if name.endswith(INPUT_SUFFIXES) or (name == LOCK_HCL and root == top):
                out.append(name if rel == "." else f"{rel}/{name}")
    return out


def input_files(tf_dir: Path) -> list[Path]:
    """:func:`input_names` as paths inside ``tf_dir``."""
    return [tf_dir / name for name in input_names(tf_dir)]


__all__ = ["INPUT_SUFFIXES", "LOCK_HCL", "input_files", "input_names"]
