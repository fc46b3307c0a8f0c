"""Install the daemon on a host: this project's own wheel and only what the daemon
imports, into a venv under the login user's home, with its config and a 0600 token.

Layout on the host (``~/.dreamlake/nymph/<provider>/``)::

    wheels/        the uploaded wheels (pip's --find-links; no index needed)
    venv/          a venv made with the host's own python
    nymph.json     the daemon's config (control plane, namespace, provider, queues)
    token          the control-plane token, mode 0600
    run.sh         execs the daemon in the foreground; what a supervisor starts
    nymph.log      the daemon's output under tmux

Wheels, built once per source change into a local cache:

* the project wheel: ``pip wheel --no-deps`` of the source tree (copied out first,
  so the build never writes into the checkout); for a non-editable install the
  installed distribution is repacked instead;
* the daemon's dependencies: the distributions whose modules a fresh interpreter
  loads when it imports the daemon, closed over their requirements, repacked from
  this environment's installed files. A host of the same kind (same python minor,
  same platform) installs them with ``--no-index``: it needs no network. A host
  that differs falls back to pip's index for what the local wheels cannot satisfy.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from .errors import DreamlakeError, RemoteError
from .fsutil import atomic_write
from .remote.base import Shell, check, home

DAEMON_MODULE = "dreamlake.controlplane.nymph"
"""The daemon's package: it and every module in it are what the host must import."""
PROJECT = "dreamlake"
SOURCE_FOLDERS = ("dreamlake", "engine", "stacks", "templates", "cli", "controlplane")
SOURCE_FILES = ("pyproject.toml", "setup.py", "README.md", "MANIFEST.in", "LICENSE")
_SKIP_DIRS = {"__pycache__", ".terraform", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".dream"}
MIN_PYTHON = (3, 11)

Progress = Callable[[str], None]


class InstallError(DreamlakeError):
    kind = "install"


def cache_dir() -> Path:
    env = os.environ.get("DREAMLAKE_WHEEL_CACHE")
    if env:
        return Path(env)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("dreamlake")) / "wheels"


# -- the project wheel ------------------------------------------------------------


def project_source() -> Path | None:
    """The source tree this process runs from (an editable install), else None."""
    import dreamlake

    for p in Path(dreamlake.__file__).resolve().parents:
        if (p / "setup.py").is_file() and (p / "pyproject.toml").is_file():
            text = (p / "pyproject.toml").read_text(encoding="utf-8", errors="replace")
            if re.search(r'^name\s*=\s*"dreamlake"', text, re.M):
                return p
            return None
    return None


def _source_files(src: Path) -> list[Path]:
    out: list[Path] = []
    for name in SOURCE_FILES:
        if (src / name).is_file():
            out.append(src / name)
    for folder in SOURCE_FOLDERS:
        for dirpath, dirnames, filenames in os.walk(src / folder):
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
            for f in sorted(filenames):
                if not f.endswith((".pyc", ".tfstate", ".tfplan")) and ".tfstate." not in f:
                    out.append(Path(dirpath) / f)
    return out


def source_key(src: Path) -> str:
    h = hashlib.sha256()
    for f in _source_files(src):
        h.update(f.relative_to(src).as_posix().encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def build_project_wheel(cache: Path | None = None, progress: Progress | None = None) -> Path:
    """This project's wheel, built once per source change (``pip wheel --no-deps``)."""
    cache = cache or cache_dir()
    src = project_source()
    if src is None:
        return repack(metadata.distribution(PROJECT), cache / "project")
    out = cache / "project" / source_key(src)
    found = sorted(out.glob("dreamlake-*.whl"))
    if found:
        return found[0]
    if progress:
        progress("building the dreamlake wheel (pip wheel --no-deps)")
    with tempfile.TemporaryDirectory(prefix="dreamlake-build-") as tmp:
        stage = Path(tmp) / "src"
        for f in _source_files(src):
            dest = stage / f.relative_to(src)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, dest)
        if not (stage / "README.md").exists():
            (stage / "README.md").write_text("dreamlake\n")
        wheel_dir = Path(tmp) / "wheel"
        base = [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--quiet",
            "--disable-pip-version-check",
            "-w",
            str(wheel_dir),
            str(stage),
        ]
        errors = []
        for extra in ([], ["--no-build-isolation"]):
            proc = subprocess.run(
                base[:4] + extra + base[4:],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                check=False,
                timeout=600,
            )
            if proc.returncode == 0:
                break
            errors.append(proc.stderr.strip().splitlines()[-3:])
        else:
            raise InstallError(f"could not build the dreamlake wheel: {errors}")
        built = sorted(wheel_dir.glob("dreamlake-*.whl"))
        if not built:
            raise InstallError("pip wheel produced no dreamlake wheel")
        out.mkdir(parents=True, exist_ok=True)
        final = out / built[0].name
        tmpf = out / f".{built[0].name}.tmp"
        shutil.copyfile(built[0], tmpf)
        os.replace(tmpf, final)
    _prune(out.parent, keep=3)
    return final


def _prune(folder: Path, keep: int) -> None:
    """Drop all but the ``keep`` newest builds (one folder per source key)."""
    builds = sorted(
        (d for d in folder.iterdir() if d.is_dir()), key=lambda d: d.stat().st_mtime, reverse=True
    )
    for old in builds[keep:]:
        shutil.rmtree(old, ignore_errors=True)


# -- the daemon's dependencies ------------------------------------------------------

_PROBE = r"""
import importlib, importlib.metadata as md, json, sys
import pkgutil
before = set(sys.modules)
try:
    pkg = importlib.import_module(sys.argv[1])
    for info in pkgutil.walk_packages(getattr(pkg, "__path__", []), pkg.__name__ + "."):
        importlib.import_module(info.name)
except Exception as exc:
    print(json.dumps({"error": repr(exc)})); raise SystemExit(0)
tops = {m.split(".")[0] for m in set(sys.modules) - before} - set(sys.stdlib_module_names)
pd = md.packages_distributions()
print(json.dumps({"dists": sorted({d for t in tops for d in pd.get(t, [])})}))
"""


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def imported_distributions(module: str = DAEMON_MODULE) -> list[str]:
    """Distributions a fresh interpreter loads to import ``module`` and, for a package,
    every module in it (so imports done lazily inside functions are counted too)."""
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, module],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    try:
        data = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise InstallError(
            f"could not inspect the daemon's imports: {proc.stderr[-400:]}"
        ) from None
    if "error" in data:
        raise InstallError(f"the daemon module {module} does not import here: {data['error']}")
    return [d for d in data["dists"] if _norm(d) != PROJECT]


def requirement_closure(names: Iterable[str]) -> list[metadata.Distribution]:
    """``names`` and everything they require (markers evaluated, no extras)."""
    from packaging.requirements import Requirement

    seen: dict[str, metadata.Distribution] = {}
    todo = [_norm(n) for n in names]
    while todo:
        n = todo.pop()
        if n in seen or n == PROJECT:
            continue
        try:
            dist = metadata.distribution(n)
        except metadata.PackageNotFoundError:
            continue
        seen[n] = dist
        for r in dist.requires or []:
            req = Requirement(r)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(_norm(req.name))
    return [seen[k] for k in sorted(seen)]


def _wheel_tag(dist: metadata.Distribution) -> str:
    text = dist.read_text("WHEEL") or ""
    tags = [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Tag:")]
    return tags[0] if tags else "py3-none-any"


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode()


def repack(dist: metadata.Distribution, out_dir: Path) -> Path:
    """A wheel rebuilt from an installed distribution's files (its RECORD)."""
    name = re.sub(r"[-_.]+", "_", dist.metadata["Name"])
    version = dist.version
    tag = _wheel_tag(dist)
    out_dir.mkdir(parents=True, exist_ok=True)
    final = out_dir / f"{name}-{version}-{tag}.whl"
    if final.exists():
        return final
    files = [f for f in dist.files or [] if not str(f).startswith("..")]
    info_dir = next(
        (str(f).split("/")[0] for f in files if str(f).split("/")[0].endswith(".dist-info")),
        f"{name}-{version}.dist-info",
    )
    skip = {f"{info_dir}/{n}" for n in ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json")}
    buf = io.BytesIO()
    rows: list[tuple[str, str, str]] = []
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for f in files:
            arc = str(f).replace(os.sep, "/")
            if arc in skip or "__pycache__" in arc or arc.endswith(".pyc"):
                continue
            path = Path(str(f.locate()))
            if not path.is_file():
                continue
            data = path.read_bytes()
            zf.writestr(arc, data)
            rows.append((arc, _record_hash(data), str(len(data))))
        if f"{info_dir}/WHEEL" not in {r[0] for r in rows}:
            wheel = f"Wheel-Version: 1.0\nGenerator: dreamlake\nRoot-Is-Purelib: true\nTag: {tag}\n"
            zf.writestr(f"{info_dir}/WHEEL", wheel)
            rows.append((f"{info_dir}/WHEEL", _record_hash(wheel.encode()), str(len(wheel))))
        rec = io.StringIO()
        w = csv.writer(rec, lineterminator="\n")
        w.writerows(rows)
        w.writerow((f"{info_dir}/RECORD", "", ""))
        zf.writestr(f"{info_dir}/RECORD", rec.getvalue())
    # A temp name of its own: two runs repacking at once must not write one file.
    atomic_write(final, buf.getvalue(), mode=0o644)
    return final


def pip_wheel(cache: Path | None = None) -> Path | None:
    """pip itself as a wheel (run from the wheel on the host: ``python pip.whl/pip``)."""
    try:
        return repack(metadata.distribution("pip"), (cache or cache_dir()) / "tools")
    except metadata.PackageNotFoundError:
        return None


def dependency_wheels(cache: Path | None = None, module: str = DAEMON_MODULE) -> list[Path]:
    cache = cache or cache_dir()
    pyver = f"py{sys.version_info.major}{sys.version_info.minor}"
    dists = requirement_closure(imported_distributions(module))
    return [repack(d, cache / "deps" / pyver) for d in dists]


# -- installing on a host -----------------------------------------------------------


@dataclass(frozen=True)
class DaemonConfig:
    """What the daemon needs to claim ``provider``."""

    provider: str
    server: str
    namespace: str
    token: str | None
    queues: tuple[str, ...] = ()
    worker_name: str | None = None
    workdir: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    identity: str | None = None  # provider.json's identity, sent when registering


@dataclass(frozen=True)
class Installed:
    dir: str
    python: str
    run_script: str
    log: str
    config: str
    token_file: str
    changed: bool
    notes: tuple[str, ...] = ()


def install_dir(home_dir: str, provider: str) -> str:
    return f"{home_dir}/.dreamlake/nymph/{provider}"


_FIND_PYTHON = r"""
for p in python3.13 python3.12 python3.11 python3 /usr/bin/python3 /usr/local/bin/python3; do
  x=$(command -v "$p" 2>/dev/null) || continue
  "$x" -c 'import sys, venv; print(sys.executable, "%d.%d" % sys.version_info[:2])' 2>/dev/null
done
true
"""


def find_python(shell: Shell) -> tuple[str, str]:
    """The host python to build the venv with: this machine's minor version when the
    host has it (binary wheels then match), else the newest ≥ 3.11."""
    seen: dict[str, str] = {}
    for line in shell.run(_FIND_PYTHON, timeout=30).stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] not in seen:
            seen[parts[0]] = parts[1]
    ok = [(p, v) for p, v in seen.items() if tuple(map(int, v.split("."))) >= MIN_PYTHON]
    if not ok:
        found = ", ".join(f"{p} ({v})" for p, v in seen.items()) or "none"
        raise RemoteError(
            f"{shell.label} has no python ≥ 3.11 with venv to run the daemon (found: {found}). "
            "Install python3 (3.11 or newer) with its venv module there, then re-run connect.",
            kind="no_python",
        )
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    same = [pv for pv in ok if pv[1] == here]
    return (same or sorted(ok, key=lambda pv: tuple(map(int, pv[1].split("."))), reverse=True))[0]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def nymph_argv(cfg: DaemonConfig, token_file: str) -> list[str]:
    """The daemon's flags (see ``nymph --help``)."""
    argv = [
        "--server",
        cfg.server,
        "--token-file",
        token_file,
        "--namespace",
        cfg.namespace,
        "--provider",
        cfg.provider,
    ]
    if cfg.queues:
        argv += ["--queues", ",".join(cfg.queues)]
    if cfg.worker_name:
        argv += ["--instance-id", cfg.worker_name]
    if cfg.workdir:
        argv += ["--workdir", cfg.workdir]
    if cfg.identity:
        argv += ["--identity", cfg.identity]
    return argv


def run_script(d: str, python: str, argv: list[str]) -> str:
    """``run.sh``: execs the daemon in the foreground, what a supervisor starts."""
    args = " ".join(shlex.quote(a) for a in argv)
    return (
        "#!/bin/sh\n"
        "# Runs the nymph daemon in the foreground; a supervisor (systemd or tmux) starts this.\n"
        f"cd {shlex.quote(d)} || exit 1\n"
        f"exec {shlex.quote(python)} -c "
        "'import sys; from dreamlake.controlplane.nymph.main import main; sys.exit(main())' "
        f"{args}\n"
    )


def daemon_config_json(cfg: DaemonConfig, token_file: str) -> str:
    data: dict[str, Any] = {
        "server": cfg.server,
        "namespace": cfg.namespace,
        "provider": cfg.provider,
        "tokenFile": token_file,
        "queues": list(cfg.queues),
    }
    if cfg.worker_name:
        data["workerName"] = cfg.worker_name
    if cfg.workdir:
        data["workdir"] = cfg.workdir
    if cfg.identity:
        data["identity"] = cfg.identity
    data.update(cfg.extra)
    return json.dumps(data, indent=2) + "\n"


def install(
    shell: Shell,
    cfg: DaemonConfig,
    *,
    progress: Progress | None = None,
    cache: Path | None = None,
    module: str = DAEMON_MODULE,
) -> Installed:
    """Install (or refresh) the daemon for ``cfg.provider`` on ``shell``'s host."""
    say = progress or (lambda _m: None)
    project = build_project_wheel(cache, progress)
    deps = dependency_wheels(cache, module)
    pip = pip_wheel(cache)
    wheels = [*deps, project, *([pip] if pip else [])]

    d = install_dir(home(shell), cfg.provider)
    wd = f"{d}/wheels"
    check(shell, f"umask 077; mkdir -p {shlex.quote(wd)}", what=f"creating {d}")
    remote_sums: dict[str, str] = {}
    for line in shell.run(
        f"cd {shlex.quote(wd)} && sha256sum -- *.whl 2>/dev/null; true"
    ).stdout.splitlines():
        parts = line.split()
        if len(parts) == 2:
            remote_sums[parts[1].lstrip("*")] = parts[0]
    sums = {w.name: _sha256(w) for w in wheels}
    to_send = [w for w in wheels if remote_sums.get(w.name) != sums[w.name]]
    if to_send:
        say(f"uploading {len(to_send)} wheel(s) to {shell.label}:{wd}")
    for w in to_send:
        shell.put_file(str(w), f"{wd}/{w.name}", mode=0o644)

    python, pyver = find_python(shell)
    venv = f"{d}/venv"
    vpy = f"{venv}/bin/python"
    stamp_want = json.dumps({"python": python, "wheels": sums}, sort_keys=True)
    try:
        had = json.loads(shell.run(f"cat {shlex.quote(d)}/installed.json 2>/dev/null").stdout)
    except ValueError:
        had = {}
    venv_ok = shell.run(f"{shlex.quote(vpy)} -c 'import sys' 2>/dev/null").ok
    notes: list[str] = []
    fresh = not (venv_ok and isinstance(had, dict) and had.get("python") == python)
    old_sums = {} if fresh else dict(had.get("wheels") or {})
    dep_names = [w.name for w in deps if fresh or old_sums.get(w.name) != sums[w.name]]
    project_changed = fresh or old_sums.get(project.name) != sums[project.name]
    changed = bool(dep_names) or project_changed
    if changed:
        say(f"installing the daemon into {venv} (python {pyver})")
        _install_into_venv(
            shell,
            python,
            venv,
            wd,
            dep_names,
            project.name if project_changed else None,
            pip.name if pip else None,
            notes,
            fresh=fresh,
        )
        smoke = shell.run(
            f"cd / && {shlex.quote(vpy)} -c {shlex.quote(_SMOKE)} {module}", timeout=120
        )
        if not smoke.ok:
            raise InstallError(
                f"the daemon was installed into {venv} on {shell.label} but does not import: "
                f"{smoke.tail(4)}"
            )
        shell.put_bytes(stamp_want.encode(), f"{d}/installed.json", mode=0o644)

    token_file = f"{d}/token"
    config = f"{d}/nymph.json"
    shell.put_bytes((cfg.token or "").encode(), token_file, mode=0o600)
    shell.put_bytes(daemon_config_json(cfg, token_file).encode(), config, mode=0o600)
    if cfg.workdir:
        check(shell, f"mkdir -p {shlex.quote(cfg.workdir)}", what=f"creating {cfg.workdir}")
    run = f"{d}/run.sh"
    shell.put_bytes(run_script(d, vpy, nymph_argv(cfg, token_file)).encode(), run, mode=0o700)
    return Installed(
        dir=d,
        python=vpy,
        run_script=run,
        log=f"{d}/nymph.log",
        config=config,
        token_file=token_file,
        changed=changed,
        notes=tuple(notes),
    )


_SMOKE = r"""
import importlib, pkgutil, sys
pkg = importlib.import_module(sys.argv[1])
for info in pkgutil.walk_packages(getattr(pkg, "__path__", []), pkg.__name__ + "."):
    importlib.import_module(info.name)
"""

_UNPACK = r"""
import sys, sysconfig, zipfile
site = sysconfig.get_paths()["purelib"]
for w in sys.argv[1:]:
    zipfile.ZipFile(w).extractall(site)
"""


def _install_into_venv(
    shell: Shell,
    python: str,
    venv: str,
    wd: str,
    deps: list[str],
    project: str | None,
    pip_whl: str | None,
    notes: list[str],
    *,
    fresh: bool,
) -> None:
    """Install ``deps`` and ``project`` (wheel file names in ``wd``) into the venv,
    creating it first when ``fresh``. The venv has no ensurepip pip (seconds saved,
    and hosts without python3-venv's pip work too): pip runs from the uploaded pip
    wheel; else ensurepip; else the wheels are unpacked into site-packages."""
    qv, qw = shlex.quote(venv), shlex.quote(wd)
    if fresh:
        check(
            shell,
            f"{shlex.quote(python)} -m venv --clear --without-pip {qv}",
            timeout=180,
            what=f"creating the venv {venv}",
        )
    vpy = f"{qv}/bin/python"
    pip = ""
    if pip_whl and shell.run(f"{vpy} {qw}/{pip_whl}/pip --version", timeout=60).ok:
        pip = f"{vpy} {qw}/{pip_whl}/pip"
    elif shell.run(
        f"{vpy} -m pip --version >/dev/null 2>&1 || "
        f"{vpy} -m ensurepip --default-pip >/dev/null 2>&1",
        timeout=300,
    ).ok:
        pip = f"{vpy} -m pip"
    if not pip:
        files = " ".join(shlex.quote(f"{wd}/{n}") for n in [*deps, *([project] if project else [])])
        check(
            shell,
            f"{vpy} -c {shlex.quote(_UNPACK)} {files}",
            timeout=300,
            what="unpacking the daemon's wheels",
        )
        notes.append("no pip could run on the host: the wheels were unpacked into the venv")
        return
    pip += (
        " install --quiet --disable-pip-version-check --no-input --no-warn-script-location"
        " --no-compile"
    )
    if deps:
        files = " ".join(shlex.quote(f"{wd}/{n}") for n in deps)
        res = shell.run(f"{pip} --no-index --find-links {qw} --no-deps {files}", timeout=600)
        if not res.ok:
            # Not the same machine kind (another python or platform): let pip resolve
            # what the uploaded wheels cannot satisfy from its index.
            names = " ".join(shlex.quote(n.split("-")[0]) for n in deps)
            check(
                shell,
                f"{pip} --find-links {qw} {names}",
                timeout=900,
                what="installing the daemon's dependencies",
            )
            notes.append(
                "the host differs from this machine: pip fetched some dependencies from its index"
            )
    if project:
        check(
            shell,
            f"{pip} --no-index --no-deps --force-reinstall {shlex.quote(wd + '/' + project)}",
            timeout=300,
            what="installing the dreamlake wheel",
        )
