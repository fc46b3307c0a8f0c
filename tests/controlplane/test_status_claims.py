"""``dreamlake provider status`` reads claims from a real lakeshore: unclaimed is
not degraded, a live worker makes it ``connected``, a dead control plane degrades
to ``no-lakeshore`` without failing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from lakeshore_fixtures import ServerProc, clean_env, free_port

SHARES_SERVER = True  # its one provider name is its own: the session's server

pytestmark = pytest.mark.slow


def dreamlake(cwd: Path, env: dict[str, str], *args: str) -> dict[str, object]:
    exe = Path(sys.executable).parent / "dreamlake"
    out = subprocess.run(
        [str(exe), *args, "--json"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert out.stdout, out.stderr
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def test_status_follows_the_claims(server: ServerProc, tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    token_file = tmp_path / "token"
    token_file.write_text(server.admin_token)
    env = clean_env(
        LAKESHORE_URL=server.url, LAKESHORE_TOKEN_FILE=str(token_file), HOME=str(tmp_path)
    )
    env.pop("DREAMRC", None)
    created = dreamlake(proj, env, "provider", "create", "-n", "watched", "--provider", "ssh")
    assert created["provider"] == "watched"

    before = dreamlake(proj, env, "provider", "status", "-n", "watched")
    assert before["status"] != "connected"
    assert "no-lakeshore" not in (before.get("degraded") or [])
    assert before["server"] == server.url

    server.admin.register("watched", "box-1", queues=["gpu"])
    after = dreamlake(proj, env, "provider", "status", "-n", "watched")
    assert after["status"] == "connected" and after["nextAction"] is None
    workers = after["claim"].pop("workers")
    assert after["claim"] == {"live": 1, "gone": 0, "instances": ["box-1"]}
    assert [(w["instanceId"], w["state"], w["queues"]) for w in workers] == [
        ("box-1", "joining", ["gpu"])
    ]

    env["LAKESHORE_URL"] = f"http://127.0.0.1:{free_port()}"
    down = dreamlake(proj, env, "provider", "status", "-n", "watched")
    assert down["status"] != "connected"
    assert "no-lakeshore" in (down.get("degraded") or [])
