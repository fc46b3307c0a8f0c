"""The shell of this machine: ``sh -c`` in a subprocess, stdin closed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from ..contract.errors import RemoteError
from .base import CommandResult


class LocalShell:
    """Runs commands on this machine. No SSH, no network."""

    is_local = True

    def __init__(self, label: str = "this machine", env: dict[str, str] | None = None) -> None:
        self.label = label
        self._env = {**os.environ, **env} if env else None

    def run(self, command: str, *, timeout: float = 60.0) -> CommandResult:
        from ..settings.trace import traced

        try:
            with traced(["/bin/sh", "-c", command], where=self.label) as t:
                proc = subprocess.run(
                    ["/bin/sh", "-c", command],
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    text=True,
                    timeout=timeout,
                    check=False,
                    env=self._env,
                )
                t.returncode = proc.returncode
        except subprocess.TimeoutExpired as exc:
            raise RemoteError(
                f"{command!r} did not finish within {timeout:.0f}s on {self.label}",
                kind="remote_timeout",
            ) from exc
        return CommandResult(command, proc.returncode, proc.stdout, proc.stderr)

    def put_bytes(self, data: bytes, remote_path: str, *, mode: int = 0o644) -> None:
        dest = Path(self._expand(remote_path))
        dest.parent.mkdir(parents=True, exist_ok=True)
        import tempfile  # only for uploads: status runs commands alone

        fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.")
        try:
            os.fchmod(fd, mode)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, dest)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def put_file(self, local_path: str, remote_path: str, *, mode: int = 0o644) -> None:
        dest = Path(self._expand(remote_path))
        dest.parent.mkdir(parents=True, exist_ok=True)
        import tempfile  # only for uploads: status runs commands alone

        fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.")
        os.close(fd)
        try:
            import shutil

            shutil.copyfile(local_path, tmp)
            os.chmod(tmp, mode)
            os.replace(tmp, dest)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def _expand(self, path: str) -> str:
        if path.startswith("~/") and self._env and "HOME" in self._env:
            return self._env["HOME"] + path[1:]
        return os.path.expanduser(path)

    def close(self) -> None:
        return None
