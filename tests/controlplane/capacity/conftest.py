"""Capacity tests reuse the launch tests' harness (an in-process control plane over
SQLite, moto's AWS API on 127.0.0.1)."""

import sys
from pathlib import Path

for _dir in (Path(__file__).parent, Path(__file__).parent.parent / "launch"):
    if str(_dir) not in sys.path:
        sys.path.insert(0, str(_dir))

from launch_harness import app_client, aws_api  # noqa: E402, F401
