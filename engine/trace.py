"""What ``--verbose`` / ``DREAMLAKE_LOG=debug`` shows: every subprocess the engine runs
(terraform, a host shell command, a CLI a probe asks), its command line, where, and
how long it took with what exit code. Standard ``logging`` under ``dreamlake``; the CLI
decides whether anything is printed (nothing is, by default)."""

from __future__ import annotations

import logging
import shlex
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

LOG = logging.getLogger("dreamlake.subprocess")


class Timing:
    """Set ``returncode`` before the block ends; it is logged with the duration."""

    returncode: int | None = None


@contextmanager
def traced(
    argv: Sequence[str] | str, cwd: Path | str | None = None, where: str = ""
) -> Iterator[Timing]:
    timing = Timing()
    if not LOG.isEnabledFor(logging.DEBUG):
        yield timing
        return
    line = argv if isinstance(argv, str) else shlex.join(str(a) for a in argv)
    place = f" (in {cwd})" if cwd else ""
    place += f" on {where}" if where else ""
    LOG.debug("run: %s%s", line, place)
    start = time.monotonic()
    try:
        yield timing
    finally:
        took = time.monotonic() - start
        rc = "?" if timing.returncode is None else timing.returncode
        LOG.debug(
            "done in %.2fs, exit %s: %s", took, rc, line if len(line) < 120 else line[:117] + "…"
        )
