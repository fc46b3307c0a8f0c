"""The vendor registry: every vendor the engine can scaffold, read from the
``TEMPLATE.json`` manifests shipped in ``dreamlake.templates``.

A manifest::

    {"vendor": "kube", "version": 1, "kind": "k8s", "backends": ["terraform", "pulumi"],
     "files": ["terraform/*.tf", "terraform/terraform.tfvars", "ADAPT.md"],
     "decisions": [{"key": "region", "var": "region", "file": "terraform/terraform.tfvars",
                    "probe": "aws-regions-in-use", "why": "..."}]}

``file`` is relative to the provider directory. For the ssh vendor the decisions
live in ``adopt.json`` and ``backends`` is ``["none"]``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

from .errors import UnknownVendor

TEMPLATES_PACKAGE = "dreamlake.templates"


@dataclass(frozen=True)
class Decision:
    key: str
    var: str
    file: str
    why: str = ""
    probe: str | None = None
    placeholder: Any = None
    label: str | None = None

    @property
    def prose_label(self) -> str:
        return self.label or self.key.replace("_", " ")


@dataclass(frozen=True)
class Template:
    vendor: str
    version: int
    kind: str
    backends: tuple[str, ...]
    files: tuple[str, ...]
    decisions: tuple[Decision, ...]
    raw: dict[str, Any] = field(repr=False, compare=False, default_factory=dict)

    @property
    def root(self) -> Traversable:
        """The shipped template folder (read it with importlib.resources)."""
        return resources.files(TEMPLATES_PACKAGE).joinpath(self.vendor)

    @property
    def default_backend(self) -> str:
        return self.backends[0]

    def decision(self, key: str) -> Decision | None:
        return next((d for d in self.decisions if d.key == key), None)


def _parse(data: dict[str, Any]) -> Template:
    decisions = tuple(
        Decision(
            key=d["key"],
            var=d.get("var", d["key"]),
            file=d["file"],
            why=d.get("why", ""),
            probe=d.get("probe"),
            placeholder=d.get("placeholder"),
            label=d.get("label"),
        )
        for d in data.get("decisions", [])
    )
    return Template(
        vendor=data["vendor"],
        version=int(data["version"]),
        kind=data.get("kind", ""),
        backends=tuple(data.get("backends", ["terraform"])),
        files=tuple(data.get("files", [])),
        decisions=decisions,
        raw=data,
    )


@cache
def all_templates() -> dict[str, Template]:
    out: dict[str, Template] = {}
    base = resources.files(TEMPLATES_PACKAGE)
    for entry in base.iterdir():
        manifest = entry.joinpath("TEMPLATE.json")
        if entry.is_dir() and manifest.is_file():
            t = _parse(json.loads(manifest.read_text(encoding="utf-8")))
            out[t.vendor] = t
    return dict(sorted(out.items()))


def known_vendors() -> list[str]:
    return list(all_templates())


def get_template(vendor: str) -> Template:
    try:
        return all_templates()[vendor]
    except KeyError:
        known = ", ".join(known_vendors()) or "(none)"
        raise UnknownVendor(f"no vendor named {vendor!r}. Known vendors: {known}.") from None
