"""The daemon bundle a cloud instance (or a SLURM job, or a Pod) fetches by content
hash, built through the engine installer's public functions and cached under the
server's data dir:

* ``pyz``: the installer's zipapp (``engine.daemon_app``), when the engine has one:
  one standard-library file the host's ``python3`` runs as is;
* ``wheels``: otherwise a tar of the wheels the installer ships to an SSH host (this
  project's wheel, the daemon's dependencies, pip), installed into a venv.

The start-up script is written for the kind the server hands out (:class:`Bundle`).
"""

from __future__ import annotations

import hashlib
import importlib
import io
import os
import shutil
import tarfile
import threading
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_LOCK = threading.Lock()
KINDS = ("pyz", "wheels")


@dataclass(frozen=True)
class Bundle:
    sha256: str
    path: Path
    kind: str  # one of KINDS


def _folder(data_dir: Path) -> Path:
    folder = data_dir / "daemon"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder


def _keep(folder: Path, sha: str, suffix: str, source: Path | bytes) -> Path:
    path = folder / f"{sha}.{suffix}"
    if not path.is_file():
        tmp = folder / f".{sha}.tmp"
        if isinstance(source, bytes):
            tmp.write_bytes(source)
        else:
            shutil.copyfile(source, tmp)
        os.replace(tmp, path)
    return path


def _zipapp(data_dir: Path, daemon_app: Any) -> Bundle:
    from dreamlake.engine.daemon import install

    built = daemon_app.cached(install.cache_dir(), daemon_app.module_closure())
    path = _keep(_folder(data_dir), built.sha256, "pyz", Path(built.path))
    return Bundle(built.sha256, path, "pyz")


def _wheels(data_dir: Path) -> Bundle:
    from dreamlake.engine.daemon import install

    files = [*install.dependency_wheels(), install.build_project_wheel()]  # type: ignore[attr-defined]
    pip = install.pip_wheel()  # type: ignore[attr-defined]
    if pip is not None:
        files.append(pip)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for p in sorted(files, key=lambda f: f.name):
            info = tar.gettarinfo(str(p), arcname=p.name)
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            with p.open("rb") as fh:
                tar.addfile(info, fh)
    data = buf.getvalue()
    sha = hashlib.sha256(data).hexdigest()
    return Bundle(sha, _keep(_folder(data_dir), sha, "tar", data), "wheels")


def build(data_dir: Path) -> Bundle:
    """The current bundle: the engine's zipapp when it has one, else the wheels."""
    with _LOCK:
        try:
            daemon_app = importlib.import_module("dreamlake.engine.daemon.build")
        except ModuleNotFoundError:
            daemon_app = None
        if daemon_app is not None and hasattr(daemon_app, "cached"):
            return _zipapp(data_dir, daemon_app)
        return _wheels(data_dir)


def of(sha: str, path: Path) -> Bundle:
    """A bundle from a file (the kind read from its content)."""
    return Bundle(sha, Path(path), "pyz" if zipfile.is_zipfile(path) else "wheels")


def find(data_dir: Path, sha: str) -> Path | None:
    """The bundle with content hash ``sha``, if this server has it."""
    if len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
        return None
    for suffix in ("pyz", "tar"):
        path = data_dir / "daemon" / f"{sha}.{suffix}"
        if path.is_file():
            return path
    return None


def current(state: Any, data_dir: Path) -> Bundle:
    """The bundle this server hands out: ``state.daemon_bundle`` when the embedder set
    one (``(sha256, path)``), else the one built from the installer."""
    fixed = getattr(state, "daemon_bundle", None)
    if fixed is not None:
        return of(fixed[0], Path(fixed[1]))
    return build(data_dir)


def lookup(state: Any, data_dir: Path, sha: str) -> Path | None:
    fixed = getattr(state, "daemon_bundle", None)
    if fixed is not None and fixed[0] == sha:
        return Path(fixed[1])
    return find(data_dir, sha)
