"""The public names a program embedding dreamlake reaches for: every name of every
public ``__all__`` imports, each module in a fresh interpreter (so one module's
imports cannot hide another's broken name), and a small embedding program
type-checks with mypy against the installed package and its ``py.typed``."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from importlib.util import find_spec
from pathlib import Path

import pytest
from dreamlake.stacks import VENDORS
from wheelbuild import build_wheel

REPO = Path(__file__).resolve().parents[1]

# the module whose __all__ is public, and the SDK it needs beyond the base install
# (None: the base install is enough)
PUBLIC: dict[str, str | None] = {
    "dreamlake.engine": None,
    "dreamlake.stacks": None,
    "dreamlake.controlplane.client": None,
}
STACK_SDK = {
    "local": "pulumi",
    "ec2": "pulumi_aws",
    "gce": "pulumi_gcp",
    "kube": "pulumi_kubernetes",
}
PUBLIC.update({f"dreamlake.stacks.{v}": STACK_SDK[v] for v in VENDORS})

PROBE = textwrap.dedent(
    """
    import importlib, json, sys
    module = importlib.import_module(sys.argv[1])
    names = list(module.__all__)
    broken = {}
    for name in names:
        try:
            getattr(module, name)
        except Exception as exc:
            broken[name] = f"{type(exc).__name__}: {exc}"
    # `from module import *` is how a reader first meets __all__
    try:
        exec(f"from {sys.argv[1]} import *", {})
    except Exception as exc:
        broken["*"] = f"{type(exc).__name__}: {exc}"
    print(json.dumps({"names": names, "broken": broken}))
    """
)


def test_every_vendor_package_is_listed() -> None:
    assert set(STACK_SDK) == set(VENDORS)


@pytest.mark.parametrize("module", ["dreamlake.engine", "dreamlake.stacks"])
def test_no_public_name_is_also_a_submodule(module: str) -> None:
    """A package's public name never shares its name with one of its submodules:
    importing that submodule (the verb itself may) would replace the name on the
    package, and ``from package import name`` would then hand back a module."""
    import importlib
    import pkgutil

    pkg = importlib.import_module(module)
    submodules = {m.name for m in pkgutil.iter_modules(pkg.__path__)}
    assert set(pkg.__all__) & submodules == set()


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_every_public_name_imports_in_a_fresh_interpreter(module: str) -> None:
    sdk = PUBLIC[module]
    if sdk is not None and find_spec(sdk) is None:
        pytest.skip(f"{module} needs {sdk} (the pulumi-clouds extra), not installed here")
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, module],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO.parent,  # not the checkout: the installed package answers
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    assert found["names"], f"{module}.__all__ is empty"
    assert found["broken"] == {}, found["broken"]


def test_the_engine_docstring_names_only_public_names() -> None:
    import dreamlake.engine as engine

    assert engine.__doc__ is not None
    for line in engine.__doc__.splitlines():
        if line.strip().startswith("from dreamlake.engine import"):
            for name in line.split("import", 1)[1].split(","):
                assert name.strip() in engine.__all__, name


EMBEDDING = """
from __future__ import annotations

from dreamlake.controlplane.client import ApiFailure, Client, Unreachable
from dreamlake.engine import (
    Blocking,
    DreamlakeError,
    DriftedResource,
    ProviderLifecycleResult,
    ProviderStatus,
    create,
    drift,
    json_schema,
    status,
    supports_stateful_lifecycle,
)


def keys_to_settle(result: ProviderLifecycleResult) -> list[str]:
    blocking: list[Blocking] = result.blocking or []
    return [b.key for b in blocking]


def where(name: str, root: str) -> ProviderStatus:
    try:
        result = create(name, "local", dream_dir=root)
    except DreamlakeError as exc:
        raise SystemExit(str(exc)) from exc
    keys: list[str] = keys_to_settle(result)
    print(keys, status(name, dream_dir=root).to_json())
    return result.status


def drifted(name: str, root: str) -> list[str]:
    found: list[DriftedResource] = drift(name, dream_dir=root).drift or []
    return [f"{d.address}: {', '.join(d.attributes)} ({d.seen_at})" for d in found]


def claims(url: str) -> int:
    client = Client(url)
    try:
        return int(client.claims("lab")["live"])
    except (Unreachable, ApiFailure):
        return 0


schema: dict[str, object] = json_schema()
stateful: bool = supports_stateful_lifecycle("kube")
"""

# a deliberate mistake mypy must find: the packages' types are really read
WRONG = """
from dreamlake.engine import status

wrong: int = status("lab", dream_dir="/nonexistent")
"""


def _install_wheel(tmp_path: Path) -> Path:
    wheel = build_wheel(tmp_path / "wheels")
    site = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(site),
            str(wheel),
        ],
        check=True,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=300,
    )
    return site


def _mypy(*programs: Path, site: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    # The built wheel, installed into its own folder and put on the interpreter's
    # path, is what mypy finds as an installed package (it honours py.typed there);
    # the checkout is not on the path.
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--cache-dir",
            str(cwd / ".mypy_cache"),
            "--python-executable",
            sys.executable,
            "--no-namespace-packages",
            *map(str, programs),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin", "HOME": str(cwd)},
    )


@pytest.mark.slow
@pytest.mark.skipif(find_spec("mypy") is None, reason="needs mypy (the dev extra)")
def test_an_embedding_program_type_checks_against_the_installed_package(
    tmp_path: Path,
) -> None:
    site = _install_wheel(tmp_path)
    assert (site / "dreamlake" / "engine" / "py.typed").is_file()
    work = tmp_path / "work"
    work.mkdir()
    good = work / "embed.py"
    good.write_text(EMBEDDING)
    bad = work / "wrong.py"
    bad.write_text(WRONG)
    # One mypy run over both programs (most of its time is reading the package): the
    # embedding program has no error, the deliberate mistake is the only one found.
    proc = _mypy(good, bad, site=site, cwd=work)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    errors = [ln for ln in proc.stdout.splitlines() if ": error:" in ln]
    assert not [ln for ln in errors if Path(ln.split(":", 1)[0]).name != bad.name], (
        proc.stdout[-4000:] + proc.stderr[-2000:]
    )
    assert errors and "in 1 file (checked 2 source files)" in proc.stdout, proc.stdout
    assert "ProviderLifecycleResult" in proc.stdout, proc.stdout
    assert "py.typed" not in proc.stdout and "missing library stubs" not in proc.stdout
