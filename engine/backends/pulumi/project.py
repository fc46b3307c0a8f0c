"""The files of a provider's Pulumi project, read without the ``pulumi`` package.

<provider>/pulumi/
  Pulumi.yaml            the project: name (the config namespace), runtime, main
  __main__.py            the vendor's program, copied from dreamlake.stacks.<vendor>
  Pulumi.<name>.yaml     the stack config: THE file an agent edits (stack = provider name)
  ADAPT.md               how to choose each decision
  .state/                the default local file backend (git-ignored)
  .passphrase            the generated secrets passphrase, mode 0600 (git-ignored)
  summary.plan.json      the last clean preview's counts and input digest (git-ignored)
  update.plan.json       the saved update plan, when the CLI supports it (git-ignored)
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Any

import yaml

from ...readers import read_text
from ...yamlload import safe_load

PROJECT_DEFAULT = "dreamlake"
MAIN = "__main__.py"
SUMMARY = "summary.plan.json"
UPDATE_PLAN = "update.plan.json"
PASSPHRASE = ".passphrase"
STATE = ".state"


@dataclass(frozen=True)
class PulumiProject:
    """One provider's Pulumi project directory (``<provider>/pulumi``)."""

    dir: Path
    stack: str

    @classmethod
    def of(cls, provider_dir: Path) -> PulumiProject:
        return cls(provider_dir / "pulumi", provider_dir.name)

    @property
    def provider_dir(self) -> Path:
        return self.dir.parent

    @property
    def project_file(self) -> Path:
        for ext in (".yaml", ".yml"):
            p = self.dir / f"Pulumi{ext}"
            if p.exists():
                return p
        return self.dir / "Pulumi.yaml"

    @property
    def stack_file(self) -> Path:
        for ext in (".yaml", ".yml"):
            p = self.dir / f"Pulumi.{self.stack}{ext}"
            if p.exists():
                return p
        return self.dir / f"Pulumi.{self.stack}.yaml"

    @property
    def main(self) -> Path:
        return self.dir / MAIN

    @property
    def summary(self) -> Path:
        return self.dir / SUMMARY

    @property
    def update_plan(self) -> Path:
        return self.dir / UPDATE_PLAN

    @property
    def passphrase(self) -> Path:
        return self.dir / PASSPHRASE

    @property
    def default_state_dir(self) -> Path:
        return self.dir / STATE

    def project_settings(self) -> dict[str, Any]:
        try:
            data = safe_load(read_text(self.project_file))
        except (OSError, ValueError, yaml.YAMLError):
            return {}
        return data if isinstance(data, dict) else {}

    @property
    def name(self) -> str:
        """The project name, which namespaces config keys (``<project>:<key>``)."""
        name = self.project_settings().get("name")
        return name if isinstance(name, str) and name else PROJECT_DEFAULT

    def inputs(self) -> list[Path]:
        """The files a preview depends on: project, stack config and program sources."""
        files = [self.project_file, self.stack_file]
        if self.dir.is_dir():
            files += sorted(
                p
                for p in self.dir.rglob("*.py")
                if "__pycache__" not in p.parts and STATE not in p.relative_to(self.dir).parts
            )
        return [p for p in files if p.is_file()]


def config_model(vendor: str) -> Any | None:
    """The vendor's config model class (``dreamlake.stacks.<vendor>.Config``), or None."""
    try:
        mod = import_module(f"dreamlake.stacks.{vendor}")
    except ImportError:
        return None
    return getattr(mod, "Config", None)
