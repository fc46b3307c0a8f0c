"""The daemon as one standard-library zipapp (``nymph.pyz``), run by a host's own
``python3`` (3.9 or newer): no venv, no pip, no third-party package.

What goes in: the daemon package (``dreamlake.controlplane.nymph``, every module in
it) and the project modules those import, found by reading their ``import``
statements (imports inside functions included, ``if TYPE_CHECKING:`` blocks left
out), with every parent package's ``__init__``. Anything else they import must be
the standard library; :func:`external_imports` names what is not, save
:data:`OPTIONAL`: what the daemon imports only when asked to and the host has it
(OpenTelemetry, when traces are configured; without them nothing of it is imported).

The archive holds modules only, no package metadata: the daemon reads its version
from ``dreamlake.__version__``, never through ``importlib.metadata``.

The archive is built deterministically (sorted entries, fixed timestamps and
modes, stored uncompressed), so the same sources give the same bytes and the same
sha256, which is what names it in the local cache and what decides whether a host
needs an upload.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib.util
import io
import os
import pkgutil
import sys
import zipapp
import zipfile
from dataclasses import dataclass
from pathlib import Path

DAEMON_PACKAGE = "dreamlake.controlplane.nymph"
PROJECT = "dreamlake"
APP_NAME = "nymph.pyz"
MIN_PYTHON = (3, 9)
INTERPRETER = "/usr/bin/env python3"
_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can carry
# Imported only when configured (OTEL_EXPORTER_OTLP_ENDPOINT) and installed on the
# host: never on a bare python3 (tests/controlplane/test_tracing.py holds it).
OPTIONAL = frozenset({"opentelemetry"})

MAIN = f"""\
# nymph, the dreamlake daemon, as a zipapp:  python3 {APP_NAME} --help
import sys

if sys.version_info < {MIN_PYTHON!r}:
    sys.stderr.write(
        "nymph: error: needs Python {MIN_PYTHON[0]}.{MIN_PYTHON[1]} or newer; %s is %s\\n"
        % (sys.executable, sys.version.split()[0])
    )
    sys.exit(2)

from dreamlake.controlplane.nymph.main import main

sys.exit(main())
"""


@dataclass(frozen=True)
class Module:
    name: str
    file: Path
    is_package: bool

    @property
    def arcname(self) -> str:
        path = self.name.replace(".", "/")
        return f"{path}/__init__.py" if self.is_package else f"{path}.py"


def _find(name: str) -> Module | None:
    """The project module ``name`` as this process would import it, else None."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    return Module(name, Path(spec.origin), spec.submodule_search_locations is not None)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(mod: Module) -> list[str]:
    """Absolute names ``mod`` imports at run time (``from X import Y`` gives X and
    X.Y, the latter only counting when Y is a module)."""
    tree = ast.parse(mod.file.read_bytes(), str(mod.file))
    package = mod.name if mod.is_package else mod.name.rpartition(".")[0]
    out: list[str] = []

    def visit(nodes: list[ast.stmt] | list[ast.AST]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and _is_type_checking(node.test):
                visit(list(node.orelse))
                continue
            if isinstance(node, ast.Import):
                out.extend(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    target = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    target = node.module or ""
                out.append(target)
                out.extend(f"{target}.{a.name}" for a in node.names if a.name != "*")
            visit(list(ast.iter_child_nodes(node)))

    visit(list(tree.body))
    return out


def _parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def module_closure(package: str = DAEMON_PACKAGE) -> list[Module]:
    """``package``, every module in it, and the project modules they import (with
    their parent packages), sorted by name."""
    root = _find(package)
    if root is None:
        raise ImportError(f"{package} is not importable here")
    todo = [package]
    if root.is_package:
        todo += [
            info.name for info in pkgutil.walk_packages([str(root.file.parent)], package + ".")
        ]
    seen: dict[str, Module] = {}
    while todo:
        name = todo.pop()
        if name in seen or name.split(".")[0] != PROJECT:
            continue
        mod = _find(name)
        if mod is None:
            continue  # ``from pkg import attribute``: not a module
        seen[name] = mod
        todo += _parents(name)
        todo += _imports(mod)
    return [seen[n] for n in sorted(seen)]


def external_imports(modules: list[Module]) -> dict[str, list[str]]:
    """Top-level names the modules import that are neither the project's nor the
    standard library's (nor :data:`OPTIONAL`), each with the modules importing it.
    Empty for a daemon that runs on a bare ``python3``."""
    found: dict[str, set[str]] = {}
    for mod in modules:
        for name in _imports(mod):
            top = name.split(".")[0]
            if (
                top
                and top != PROJECT
                and top not in sys.stdlib_module_names
                and top not in OPTIONAL
            ):
                found.setdefault(top, set()).add(mod.name)
    return {k: sorted(v) for k, v in sorted(found.items())}


def _entry(arcname: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(arcname, date_time=_EPOCH)
    info.compress_type = zipfile.ZIP_STORED
    info.create_system = 3  # unix: the mode below means what it says
    info.external_attr = 0o100644 << 16
    return info


def build(modules: list[Module] | None = None) -> bytes:
    """The zipapp's bytes: a ``#!/usr/bin/env python3`` line, then a zip holding
    ``__main__.py`` and the modules. Same sources, same bytes."""
    modules = module_closure() if modules is None else modules
    files = {m.arcname: m.file.read_bytes() for m in modules}
    files["__main__.py"] = MAIN.encode()
    raw = io.BytesIO()
    with zipfile.ZipFile(raw, "w", zipfile.ZIP_STORED) as zf:
        for arcname in sorted(files):
            zf.writestr(_entry(arcname), files[arcname])
    raw.seek(0)
    out = io.BytesIO()
    zipapp.create_archive(raw, out, interpreter=INTERPRETER)
    return out.getvalue()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Built:
    path: Path
    sha256: str
    fresh: bool  # written by this call (no build of these sources was cached)


def cached(cache: Path, modules: list[Module] | None = None) -> Built:
    """The zipapp in the local cache (``<cache>/nymph-<sha256 prefix>.pyz``), written
    once per content hash. Builds beyond the three most recently used are removed."""
    data = build(modules)
    digest = sha256(data)
    path = cache / f"nymph-{digest[:16]}.pyz"
    try:
        fresh = path.read_bytes() != data
    except OSError:
        fresh = True
    if fresh:
        from ..settings.fsutil import atomic_write

        cache.mkdir(parents=True, exist_ok=True)
        atomic_write(path, data, mode=0o644)
    else:
        os.utime(path)  # recently used: kept by the pruning below
    _prune(cache, keep=3)
    return Built(path, digest, fresh)


def _prune(cache: Path, keep: int) -> None:
    builds = sorted(cache.glob("nymph-*.pyz"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in builds[keep:]:
        with contextlib.suppress(OSError):
            old.unlink()
