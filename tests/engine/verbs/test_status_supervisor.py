"""``status`` reports the supervisor running the daemon, asked from the host as
``connect`` asks it: a real tmux session on this machine for a ``local`` provider."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from dreamlake.engine.backends.terraform.binaries import available
from dreamlake.engine.daemon.probe import (
    parse_running,
    running_script,
    tmux_server_up,
    tmux_socket,
)
from dreamlake.engine.verbs.apply import apply
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.plan import plan
from dreamlake.engine.verbs.status import status


def test_parse_running_prefers_systemd() -> None:
    assert parse_running("running_tmux=yes\nrunning_user=yes\n") == "systemd-user"
    assert parse_running("running_tmux=yes\n") == "tmux"
    assert parse_running("tmux=yes\n") is None


def test_the_script_asks_systemd_only_where_it_can_run() -> None:
    assert "systemctl" not in running_script("p", systemd=False)
    here = running_script("p", systemd=True)
    assert "systemctl --user is-active" in here and "/run/systemd/system" not in here
    remote = running_script("p")
    assert "[ -d /run/systemd/system ]" in remote and 'tmux has-session -t "=nymph-$k"' in remote
    assert remote.startswith("k=p\n")  # a plain key: no older install to look for


def test_tmux_server_up_reads_the_socket_tmux_would_ask(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    monkeypatch.delenv("TMUX", raising=False)
    monkeypatch.setenv("TMUX_TMPDIR", str(tmp_path))
    path = tmp_path / f"tmux-{os.getuid()}" / "default"
    assert tmux_socket() == str(path)
    assert not tmux_server_up()  # no socket: no server
    path.parent.mkdir()
    left = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    left.bind(str(path))
    left.close()  # a socket file nobody listens on (a killed server leaves one)
    assert path.exists() and not tmux_server_up()
    path.unlink()
    live = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    live.bind(str(path))
    live.listen()
    try:
        assert tmux_server_up()
    finally:
        live.close()
    monkeypatch.setenv("TMUX", f"{tmp_path}/inside,123,0")  # inside tmux: its own socket
    assert tmux_socket() == f"{tmp_path}/inside"


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (scripts/test installs it)")
@pytest.mark.skipif(not available(), reason="needs a terraform binary")
def test_status_reports_the_supervisor_running_the_daemon(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMUX_TMPDIR", str(tmp_path))  # a tmux server of this test's own
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", os.devnull)
    name = f"sv-{uuid.uuid4().hex[:8]}"
    dd = str(project)
    create(name, "local", dream_dir=dd, probe=False)
    (project / f".dream/providers/{name}/terraform/terraform.tfvars").write_text(
        f'workdir = "{tmp_path}/w"\nqueues = ["a"]\nworker_name = "{name}-box"\n'
    )
    assert plan(name, dream_dir=dd).status == "ready"
    assert apply(name, yes=True, dream_dir=dd).outputs

    before = status(name, dream_dir=dd, probe=False)
    assert before.supervisor is None and "no-supervisor" not in (before.degraded or [])
    if not os.path.isdir("/run/systemd/system"):
        # No tmux server and no systemd: status asks no process at all.
        code = (
            "import sys; from dreamlake.engine.verbs.status import status; "
            f"r = status({name!r}, dream_dir={dd!r}, probe=False); "
            "print(r.status, 'subprocess' in sys.modules)"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert out.stdout.split() == ["applied", "False"], out.stderr
    # The scan's answer, once remembered, costs status neither the variable-file
    # reader nor the expression evaluator (the files are fresh: no racy window here).
    monkeypatch.setenv("DREAMLAKE_CACHE_DIR", str(tmp_path / "cache"))
    warm = (
        "import sys; from dreamlake.engine.settings import usercache; usercache.RACY_SECONDS = 0; "
        "from dreamlake.engine.verbs.status import status; "
        f"r = status({name!r}, dream_dir={dd!r}, probe=False); "
        "print(r.status, sorted(m for m in sys.modules if m.startswith('dreamlake.engine.scan.')))"
    )
    runs = [
        subprocess.run([sys.executable, "-c", warm], capture_output=True, text=True) for _ in "ab"
    ]
    assert "dreamlake.engine.scan.terraform" in runs[0].stdout, runs[0].stderr
    assert runs[1].stdout.split(" ", 1) == [
        "applied",
        "['dreamlake.engine.scan.cache', 'dreamlake.engine.scan.result']\n",
    ], runs[1].stderr

    # A session named after the provider is not its daemon (another root's `name`
    # may own it): the daemon's session is keyed by the provider's identity.
    ident = json.loads((project / f".dream/providers/{name}/provider.json").read_text())["id"]
    for session, mine in ((f"nymph-{name}", False), (f"nymph-{ident}", True)):
        subprocess.run(["tmux", "new-session", "-d", "-s", session, "sleep 120"], check=True)
        try:
            res = status(name, dream_dir=dd, probe=False)
            if mine:
                assert res.supervisor == "tmux" and res.host == "localhost"
                assert "no-supervisor" in (res.degraded or [])
            else:
                assert res.supervisor is None, res
        finally:
            subprocess.run(["tmux", "kill-session", "-t", f"={session}"], check=False)
    after = status(name, dream_dir=dd, probe=False)
    assert after.supervisor is None


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (scripts/test installs it)")
def test_a_daemon_connect_just_started_is_connecting_while_its_supervisor_runs_it(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``connect`` answered ``connecting`` (started, no claim yet): status says the
    same — look again — while tmux runs the daemon within the start window, instead
    of ``unclaimed`` whose ``connect`` would restart a slow starter."""
    import json

    from dreamlake.engine.world.intent import START_WINDOW, write_intent

    monkeypatch.setenv("TMUX_TMPDIR", str(tmp_path))  # a tmux server of this test's own
    name = f"cg-{uuid.uuid4().hex[:8]}"
    dd = str(project)
    create(name, "local", dream_dir=dd, probe=False)
    pdir = project / f".dream/providers/{name}"
    outputs = {"worker_host": {"value": "localhost", "type": "string"}}
    state = {"version": 4, "serial": 1, "lineage": "l", "outputs": outputs, "resources": []}
    (pdir / "terraform/terraform.tfstate").write_text(json.dumps(state))
    write_intent(pdir, "connect", outcome="connecting")
    # the daemon's session is keyed by the provider's identity
    session = f"nymph-{json.loads((pdir / 'provider.json').read_text())['id']}"
    assert status(name, dream_dir=dd, probe=False).status in ("applied", "unclaimed")
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "sleep 120"], check=True)
    try:
        res = status(name, dream_dir=dd, probe=False)
        assert res.status == "connecting" and res.exit_code == 0, res.to_json()
        assert res.next_action is not None
        assert res.next_action.command == f"dreamlake provider status -n {name} --dream-dir {dd}"
        # past the window, a daemon that never claimed is not starting: restart it
        import time

        write_intent(pdir, "connect", outcome="connecting", started=time.time() - START_WINDOW - 5)
        late = status(name, dream_dir=dd, probe=False)
        assert late.status in ("applied", "unclaimed")
        assert late.next_action is not None and " connect " in f"{late.next_action.command} "
    finally:
        subprocess.run(["tmux", "kill-session", "-t", f"={session}"], check=False)
