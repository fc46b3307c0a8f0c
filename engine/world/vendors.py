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
import os
from functools import cache
from pathlib import Path

from ..contract.errors import DreamlakeError, UnknownVendor
from ..settings.readers import read_json
from ..settings.records import field, record

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:  # annotations only: importlib.resources loads only when needed
    from importlib.resources.abc import Traversable
    from typing import Any

TEMPLATES_PACKAGE = "dreamlake.templates"
TEMPLATE_PATH_ENV = "DREAMLAKE_TEMPLATE_PATH"
"""Extra folders (os.pathsep-separated) holding your own ``<vendor>/TEMPLATE.json``
trees; a vendor found there takes precedence over the shipped one."""


@record()
class Decision:
    """One decision a template asks for: the variable and file it is set in."""

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


@record()
class Template:
    """A vendor's template: its files, backends and decisions."""

    vendor: str
    version: int
    kind: str
    backends: tuple[str, ...]
    files: tuple[str, ...]
    decisions: tuple[Decision, ...]
    raw: dict[str, Any] = field(repr=False, compare=False, default_factory=dict)
    source: Traversable | None = field(default=None, repr=False, compare=False)

    @property
    def root(self) -> Traversable:
        """The template folder (shipped: read it with importlib.resources)."""
        if self.source is not None:
            return self.source
        return _shipped().joinpath(self.vendor)

    @property
    def default_backend(self) -> str:
        return self.backends[0]

    def decision(self, key: str) -> Decision | None:
        return next((d for d in self.decisions if d.key == key), None)

    @property
    def stateful_lifecycle(self) -> bool:
        """``statefulLifecycle`` in TEMPLATE.json: suspend stops (state kept) rather
        than destroys. Absent: false, the stateless path (suspend = destroy)."""
        return self.raw.get("statefulLifecycle") is True


def _parse(data: dict[str, Any], source: Traversable | None = None) -> Template:
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
        source=source,
    )


def all_templates() -> dict[str, Template]:
    return _load(os.environ.get(TEMPLATE_PATH_ENV, ""))


def find_template(vendor: str) -> Template | None:
    """``all_templates().get(vendor)``, reading one manifest instead of every one
    where that gives the same answer: no user templates (``$DREAMLAKE_TEMPLATE_PATH``)
    and a shipped folder named for the vendor, whose manifest says so."""
    if os.environ.get(TEMPLATE_PATH_ENV, "") or not _plain_name(vendor):
        return all_templates().get(vendor)
    return _shipped_one(vendor)


def _plain_name(vendor: str) -> bool:
    """A name that can only be a folder's own (no separator, no dot)."""
    return vendor.isascii() and vendor.replace("-", "").replace("_", "").isalnum()


@cache
def _shipped_one(vendor: str) -> Template | None:
    root = _shipped()
    if isinstance(root, Path):
        manifest = root / vendor / "TEMPLATE.json"
        try:
            data = json.loads(manifest.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return all_templates().get(vendor)
        if data.get("vendor") == vendor:
            return _parse(data)
    return all_templates().get(vendor)


@cache
def _shipped() -> Traversable:
    """The shipped templates: their folder on disk when the package is installed as
    files (the usual case, and no importlib.resources to load), else through
    importlib.resources (a zip, an unusual loader)."""
    from importlib import import_module

    package = import_module(TEMPLATES_PACKAGE)  # its folders, without importlib.util
    for folder in getattr(package, "__path__", None) or []:
        if Path(folder, "local", "TEMPLATE.json").is_file():
            return Path(folder)
    from importlib import resources

    return resources.files(TEMPLATES_PACKAGE)


@cache
def _load(extra_path: str) -> dict[str, Template]:
    out: dict[str, Template] = {}
    bases: list[tuple[Traversable, bool]] = [(_shipped(), False)]
    bases += [(Path(p), True) for p in extra_path.split(os.pathsep) if p]
    for base, own in bases:
        if not base.is_dir():
            continue
        for entry in base.iterdir():
            manifest = entry.joinpath("TEMPLATE.json")
            if entry.is_dir() and manifest.is_file():
                try:
                    data = (
                        read_json(Path(str(manifest)))
                        if own
                        else json.loads(manifest.read_text(encoding="utf-8"))
                    )
                    t = _parse(data, entry if own else None)
                except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
                    if not own:
                        raise  # a shipped template: a bug of ours, not the user's file
                    raise _bad_manifest(manifest, exc) from None
                out[t.vendor] = t
    return dict(sorted(out.items()))


def _bad_manifest(manifest: Any, exc: Exception) -> DreamlakeError:
    from ..settings.readers import FileProblem, as_error

    problem = exc if isinstance(exc, FileProblem | OSError) else FileProblem(manifest, str(exc))
    return as_error(
        problem, None, path=str(manifest), kind="bad_template", what="template manifest"
    )


def known_vendors() -> list[str]:
    return list(all_templates())


def supports_stateful_lifecycle(vendor: str) -> bool:
    """Whether ``vendor`` can suspend and resume with its state kept (its TEMPLATE.json
    says ``statefulLifecycle: true``). Raises UnknownVendor for an unknown vendor."""
    return get_template(vendor).stateful_lifecycle


def get_template(vendor: str) -> Template:
    try:
        return all_templates()[vendor]
    except KeyError:
        known = ", ".join(known_vendors()) or "(none)"
        raise UnknownVendor(f"no vendor named {vendor!r}. Known vendors: {known}.") from None
