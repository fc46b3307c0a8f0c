"""`dreamlake demo` as a person runs it on a fresh machine: stdin closed, bounded; it
walks a `local` provider to connected and leaves nothing running or on disk."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow]


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
@pytest.mark.skipif(
    shutil.which("terraform") is None and not os.environ.get("TERRAFORM_BINARY"),
    reason="needs a terraform binary",
)
def test_demo_reaches_connected_and_cleans_up() -> None:
    exe = Path(sys.executable).parent / "dreamlake"
    argv = [str(exe)] if exe.exists() else [sys.executable, "-m", "dreamlake.cli.main"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKESHORE_")}
    p = subprocess.run(
        [*argv, "demo"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=Path.home(),
    )
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    name = re.search(r"provider create -n (\S+) --provider local", out)
    assert name, out
    n = name.group(1)
    # every step's prose, in order
    steps = [
        "needs decisions",
        "every decision in this template has a value",
        "plan is clean",
        "unclaimed",
        "✓ connected",
    ]
    pos = [out.find(s) for s in steps]
    assert all(i >= 0 for i in pos) and pos == sorted(pos), (pos, out)
    assert "lakeshore serve on 127.0.0.1" in out
    assert "done — the provider reached connected" in out
    # cleaned up: no daemon session, no install dir, no temp project, server gone.
    # Both are keyed by the provider's identity, which connect's prose names.
    keyed = re.search(r"session nymph-(prv-[0-9a-f]+)", out) or re.search(
        r"unit nymph-(prv-[0-9a-f]+)\.service", out
    )
    assert keyed, out
    key = keyed.group(1)
    assert n != key
    has = subprocess.run(
        ["tmux", "has-session", "-t", f"=nymph-{key}"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=False,
    )
    assert has.returncode != 0
    assert not (Path.home() / ".dreamlake" / "nymph" / key).exists()
    project = re.search(r"a `local` provider in (\S+)/project", out)
    assert project and not Path(project.group(1)).exists()
    url = re.search(r"control plane at (http://127\.0\.0\.1:\d+)", out)
    assert url
    import urllib.request

    with pytest.raises(OSError):
        urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
            url.group(1) + "/healthz", timeout=2
        )
