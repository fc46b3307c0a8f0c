"""The files of a provider's Pulumi project, read without the ``pulumi`` package.

<provider>/pulumi/
  Pulumi.yaml            the project: name (the config namespace), runtime, main
  __main__.py            the vendor's program, copied from dreamlake.stacks.<vendor>
  Pulumi.<name>.yaml     the stack config: THE file an agent edits (named after the provider)
  ADAPT.md               how to choose each decision
  .state/                the default local file backend (git-ignored)
  .passphrase            the generated secrets passphrase, mode 0600 (git-ignored)
  summary.plan.json      the last clean preview's counts and input digest (git-ignored)
  update.plan.json       the saved update plan, when the CLI supports it (git-ignored)
  backups/               the state exported before a recovery changed it (git-ignored)

The stack in the backend is named after the provider AND its identity
(``ProviderRecord.identity``: its ``id``, else one derived from its folder):
``<name>-<identity>``, so two roots (or two teams) that share one backend (an S3
bucket, Pulumi Cloud) and both name a provider ``lab`` never share a stack. Every
operation passes ``--config-file Pulumi.<name>.yaml``, so the file an agent edits
keeps the provider's plain name. provider.json ``settings.pulumi.stack`` names the
stack explicitly instead (an adopted ``ORG/PROJECT/STACK``, or an older stack kept).
A provider deployed before stacks carried the identity, on its own default file
backend (``pulumi/.state``), keeps its stack ``<name>``: nothing else can share it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Any

import yaml

from ...settings.readers import read_text
from ...settings.yamlload import safe_load

PROJECT_DEFAULT = "dreamlake"
MAIN = "__main__.py"
SUMMARY = "summary.plan.json"
UPDATE_PLAN = "update.plan.json"
PASSPHRASE = ".passphrase"
STATE = ".state"
BACKUPS = "backups"


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def stack_name(name: str, identity: str) -> str:
    """The backend stack of provider ``name`` with ``identity``: ``<name>-<identity>``
    (characters a stack name cannot hold become ``-``; at most 100 characters)."""
    ident = _UNSAFE.sub("-", identity).strip("-") or "x"
    return f"{name}-{ident}"[:100]


def split_stack(ref: str) -> tuple[str | None, str | None, str]:
    """``ORG/PROJECT/STACK`` → (org, project, stack); ``PROJECT/STACK`` and ``STACK``
    leave the missing parts None."""
    parts = ref.split("/")
    if len(parts) == 3:
        return parts[0], parts[1], parts[2]
    if len(parts) == 2:
        return None, parts[0], parts[1]
    return None, None, ref


@dataclass(frozen=True)
class PulumiProject:
    """One provider's Pulumi project directory (``<provider>/pulumi``).

    ``config_name``: the provider name (``Pulumi.<config_name>.yaml``); ``stack``:
    the stack in the backend, as ``--stack`` takes it (``<name>-<identity>``, or
    the ``ORG/PROJECT/STACK`` named in provider.json ``settings.pulumi.stack``);
    ``adopted``: the stack's program is not dreamlake's (``create --stack``).
    """

    dir: Path
    config_name: str
    stack: str
    adopted: bool = False

    @classmethod
    def of(cls, provider_dir: Path) -> PulumiProject:
        from ...contract.errors import DreamlakeError
        from ...world.record import read_record

        name = provider_dir.name
        folder = provider_dir / "pulumi"
        try:
            record = read_record(provider_dir / "provider.json")
        except DreamlakeError:
            record = None
        settings = record.settings.get("pulumi") if record else None
        explicit = settings.get("stack") if isinstance(settings, dict) else None
        if isinstance(explicit, str) and explicit:
            adopted = bool(isinstance(settings, dict) and settings.get("adopted"))
            return cls(folder, name, explicit, adopted)
        if record is not None:
            identity = record.identity(provider_dir)
        else:  # as ProviderRecord.identity derives it for a record without an id
            digest = hashlib.sha256(str(provider_dir.resolve()).encode()).hexdigest()
            identity = f"dir-{digest[:20]}"
        stack = stack_name(name, identity)
        legacy = cls(folder, name, name)
        if not legacy.deployed_locally(stack) and legacy.deployed_locally(name):
            return legacy
        return cls(folder, name, stack)

    def deployed_locally(self, stack: str) -> bool:
        """Whether the default file backend (``pulumi/.state``) holds ``stack``."""
        base = self.default_state_dir / ".pulumi" / "stacks"
        return any(
            (folder / f"{stack}{ext}").exists()
            for folder in (base / self.name, base)
            for ext in (".json", ".json.gz", ".json.zst")
        )

    @property
    def stack_project(self) -> str:
        """The project the stack belongs to (``PROJECT`` of ``ORG/PROJECT/STACK``)."""
        return split_stack(self.stack)[1] or self.name

    @property
    def stack_short(self) -> str:
        """The stack's own name (``STACK`` of ``ORG/PROJECT/STACK``)."""
        return split_stack(self.stack)[2]

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
            p = self.dir / f"Pulumi.{self.config_name}{ext}"
            if p.exists():
                return p
        return self.dir / f"Pulumi.{self.config_name}.yaml"

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
