"""What a plan reads as its configuration and variables, by the names of its files.

A leaf module (``os`` and ``pathlib`` only): the plan record hashes these files
(``planfile``), and an apply started ahead (``early_apply``) hashes the same files
again before the engine is imported, to see that none changed since that plan.
"""

from __future__ import annotations

import os
from pathlib import Path

INPUT_SUFFIXES = (".tf", ".tf.json", ".tfvars", ".tfvars.json")
LOCK_HCL = ".terraform.lock.hcl"


def input_files(tf_dir: Path) -> list[Path]:
    """Every file terraform reads as configuration or variables, skipping ``.terraform/``."""
    out: list[Path] = []
    for root, dirs, files in os.walk(tf_dir):
        dirs[:] = sorted(
            d for d in dirs if d != ".terraform" and not d.startswith("terraform.tfstate")
        )
        for name in sorted(files):
            if name.endswith(INPUT_SUFFIXES) or (name == LOCK_HCL and Path(root) == tf_dir):
                out.append(Path(root) / name)
    return out


__all__ = ["INPUT_SUFFIXES", "LOCK_HCL", "input_files"]
