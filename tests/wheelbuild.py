"""The project's wheel, built by pip as a user's install builds it.

Two test files build it (the packaging test and the type-checked embedding
program); pip builds in the checkout's ``build/`` folder, so two workers building
at once would trip over each other. One lock, one builder.
"""

from __future__ import annotations

import fcntl
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def build_wheel(wheels: Path) -> Path:
    """Build the wheel into ``wheels`` and return its path."""
    lock = Path(tempfile.gettempdir()) / "dreamlake-wheel-build.lock"
    with lock.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
             "-w", str(wheels), str(REPO)],
            check=True,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=300,
        )  # fmt: skip
    (wheel,) = wheels.glob("dreamlake-*.whl")
    return wheel
