"""What ``--verbose`` / ``DREAMLAKE_LOG=debug`` shows: every subprocess the engine runs
(terraform, a host shell command, a CLI a probe asks), its command line, where, and
how long it took with what exit code. Standard ``logging`` under ``dreamlake``; the CLI
decides whether anything is printed (nothing is, by default).

``logging`` is not imported here: whoever shows the log (``--verbose``, an embedding
program) has imported and configured it, and until then there is nothing to show, so
``status`` does not pay for importing it. Nor are ``typing`` and ``shlex`` (6-8 ms of
CPU): a terraform run started ahead is traced while it runs beside this process, and
its command line is only joined where a debug line is written."""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from pathlib import Path
    from typing import Any

LOGGER = "dreamlake.subprocess"


def _logger() -> Any:
    """The subprocess logger when it shows debug lines, else None."""
    logging = sys.modules.get("logging")
    if logging is None:
        return None
    log = logging.getLogger(LOGGER)
    return log if log.isEnabledFor(logging.DEBUG) else None


class Timing:
    """Set ``returncode`` before the block ends; it is logged with the duration."""

    returncode: int | None = None


@contextmanager
def traced(
    argv: Sequence[str] | str, cwd: Path | str | None = None, where: str = ""
) -> Iterator[Timing]:
    timing = Timing()
    log = _logger()
    if log is None:
        yield timing
        return
    import shlex

    line = argv if isinstance(argv, str) else shlex.join(str(a) for a in argv)
    place = f" (in {cwd})" if cwd else ""
    place += f" on {where}" if where else ""
    log.debug("run: %s%s", line, place)
    start = time.monotonic()
    try:
        yield timing
    finally:
        took = time.monotonic() - start
        rc = "?" if timing.returncode is None else timing.returncode
        log.debug(
            "done in %.2fs, exit %s: %s", took, rc, line if len(line) < 120 else line[:117] + "…"
        )
