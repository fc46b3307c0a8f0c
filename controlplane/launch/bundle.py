"""The daemon bundle a cloud instance fetches by content hash: a tar of the wheels the
engine's installer ships to an SSH host (this project's wheel, the daemon's
dependencies, pip), built through the installer's public functions and cached under
the server's data dir until the source changes."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import threading
from pathlib import Path
from typing import Any

_LOCK = threading.Lock()


def wheels() -> list[Path]:
    """What the installer would upload to a host (its public wheel builders)."""
    from ...engine import install

    found = [*install.dependency_wheels(), install.build_project_wheel()]
    pip = install.pip_wheel()
    if pip is not None:
        found.append(pip)
    return found


def build(data_dir: Path) -> tuple[str, Path]:
    """``(sha256, path)`` of the current bundle, built when the wheels changed."""
    with _LOCK:
        files = sorted(wheels(), key=lambda p: p.name)
        key = hashlib.sha256(
            "\n".join(f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in files).encode()
        ).hexdigest()[:16]
        folder = data_dir / "daemon"
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        index = folder / f"{key}.sha256"
        if index.is_file():
            sha = index.read_text().strip()
            path = folder / f"{sha}.tar"
            if path.is_file():
                return sha, path
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for p in files:
                info = tar.gettarinfo(str(p), arcname=p.name)
                info.mtime = 0
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                with p.open("rb") as fh:
                    tar.addfile(info, fh)
        data = buf.getvalue()
        sha = hashlib.sha256(data).hexdigest()
        path = folder / f"{sha}.tar"
        tmp = folder / f".{sha}.tmp"
        tmp.write_bytes(data)
        os.replace(tmp, path)
        tmp_index = folder / f".{key}.tmp"
        tmp_index.write_text(sha + "\n")
        os.replace(tmp_index, index)
        return sha, path


def find(data_dir: Path, sha: str) -> Path | None:
    """The bundle with content hash ``sha``, if this server has it."""
    if len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
        return None
    path = data_dir / "daemon" / f"{sha}.tar"
    return path if path.is_file() else None


def current(state: Any, data_dir: Path) -> tuple[str, Path]:
    """The bundle this server hands out: ``state.daemon_bundle`` when the embedder set
    one (``(sha256, path)``), else the one built from the installer's wheels."""
    fixed = getattr(state, "daemon_bundle", None)
    if fixed is not None:
        return fixed  # type: ignore[no-any-return]
    return build(data_dir)


def lookup(state: Any, data_dir: Path, sha: str) -> Path | None:
    fixed = getattr(state, "daemon_bundle", None)
    if fixed is not None and fixed[0] == sha:
        return Path(fixed[1])
    return find(data_dir, sha)
