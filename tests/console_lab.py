"""A ``local`` provider ``lab`` for tests that run the console script in an
interpreter of their own: the environment it runs in (real terraform, no CLI
config, no control plane reachable) and its decisions set."""

from __future__ import annotations

import os
from pathlib import Path


def lab_env(home: Path, terraform: str, **more: str) -> dict[str, str]:
    """The console script's whole environment: ``home`` as ``HOME``, ``terraform``
    as the binary, nothing listening at the control plane's address; ``more`` added."""
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "LAKESHORE_URL": "http://127.0.0.1:9",
        "TERRAFORM_BINARY": terraform,
        "TF_CLI_CONFIG_FILE": os.devnull,
        **more,
    }


def decide(root: Path) -> Path:
    """Set the decisions of the provider ``lab`` created under ``root``: its folder."""
    pdir = root / ".dream/providers/lab"
    (pdir / "terraform/terraform.tfvars").write_text(
        f'workdir = "{root}/w"\nqueues = ["a"]\nworker_name = "lab-box"\n'
    )
    return pdir
