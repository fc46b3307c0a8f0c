"""The ``process`` runner: one shell command, its exit code and the tail of its output."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

TAIL_CHARS = 4000
KILL_GRACE_SECONDS = 3.0


@dataclass(frozen=True)
class RunResult:
    exit_code: int | None
    output_tail: str
    error: str | None = None
    seconds: float = 0.0


def tail_text(chunks: deque[bytes], limit: int = TAIL_CHARS) -> str:
    text = b"".join(chunks).decode("utf-8", "replace")
    return text[-limit:]


class ProcessRunner:
    """Runs ``/bin/sh -c COMMAND`` in its own process group, stdin closed, stdout and
    stderr merged. A timeout or a stop request kills the whole group."""

    name = "process"

    def __init__(self, workdir: str | None = None, tail_chars: int = TAIL_CHARS) -> None:
        self.workdir = workdir
        self.tail_chars = tail_chars

    def run(
        self,
        command: str,
        *,
        timeout: float | None = None,
        stop: threading.Event | None = None,
        env: dict[str, str] | None = None,
    ) -> RunResult:
        started = time.monotonic()
        full_env = dict(os.environ)
        full_env.update(env or {})
        try:
            proc = subprocess.Popen(
                ["/bin/sh", "-c", command],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
                env=full_env,
                start_new_session=True,
            )
        except OSError as exc:
            return RunResult(None, "", f"cannot start the command: {exc}", 0.0)

        keep = max(self.tail_chars * 4, 4096)
        chunks: deque[bytes] = deque()
        size = 0

        def pump() -> None:
            nonlocal size
            stream: Any = proc.stdout
            for chunk in iter(lambda: stream.read1(65536), b""):
                chunks.append(chunk)
                size += len(chunk)
                while size - len(chunks[0]) > keep and len(chunks) > 1:
                    size -= len(chunks.popleft())

        reader = threading.Thread(target=pump, name="nymph-output", daemon=True)
        reader.start()
        error: str | None = None
        deadline = None if timeout is None else started + timeout
        while True:
            try:
                proc.wait(timeout=0.1)
                break
            except subprocess.TimeoutExpired:
                pass
            if deadline is not None and time.monotonic() >= deadline:
                error = f"timed out after {timeout:g}s"
                self._kill(proc)
                break
            if stop is not None and stop.is_set():
                error = "the daemon stopped before the command finished"
                self._kill(proc)
                break
        reader.join(timeout=2.0)
        seconds = time.monotonic() - started
        return RunResult(proc.returncode, tail_text(chunks, self.tail_chars), error, seconds)

    @staticmethod
    def _kill(proc: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=KILL_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
