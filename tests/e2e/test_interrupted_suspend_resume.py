"""An interrupted ``suspend`` or ``resume`` finishes: killed at any point once its
record (``intent.json``) exists, it reads as that verb interrupted (``applying``, the
lock ``stale``, the next action the same verb); re-running it ends where the verb
was going (``suspended`` / ``connected``), the record gone, and ``status`` agrees.

Real components: the ``local`` vendor (real terraform, the daemon under tmux on this
machine), the real control plane on 127.0.0.1, and for the kill tests a real
``kill -9`` of the ``dreamlake`` process group. The other points are reached the way
the destroy tests reach theirs: the step's own function interrupted, before or after
it ran, as a signal would."""

from __future__ import annotations

import os
import shutil
import signal
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
from dreamlake.engine.daemon import suspend as daemon_suspend
from dreamlake.engine.daemon.suspend import daemon_state
from dreamlake.engine.remote import LocalShell
from dreamlake.engine.verbs.apply import apply
from dreamlake.engine.verbs.connect import connect
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.plan import plan
from dreamlake.engine.verbs.resume import resume
from dreamlake.engine.verbs.status import status
from dreamlake.engine.verbs.suspend import suspend
from dreamlake.engine.world.intent import INTENT_FILE, read_intent

TMUX = shutil.which("tmux")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(TMUX is None, reason="needs tmux (apt-get install -y tmux)"),
    pytest.mark.skipif(not available(), reason="needs a terraform binary"),
]


@pytest.fixture
def connected(
    control_plane: Any, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Any:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", "/dev/null")
    name = f"ik-{uuid.uuid4().hex[:6]}"
    create(name, "local", cwd=project)
    pdir = project / ".dream" / "providers" / name
    (pdir / "terraform" / "terraform.tfvars").write_text(
        f'workdir = "{tmp_path / "work"}"\nqueues = ["default"]\nworker_name = "{name}-box"\n'
    )
    assert plan(name, cwd=project).status == "ready"
    assert apply(name, yes=True, cwd=project).status == "applied"
    res = connect(name, cwd=project, watch=30)
    assert res.status == "connected", (res, res.notes)
    try:
        yield name, pdir
    finally:
        supervise.stop(LocalShell(), daemon_key(project, name))


def _reads_interrupted(name: str, project: Path, verb: str) -> None:
    st = status(name, cwd=project, probe=False)
    assert st.status == "applying", st.to_json()
    assert st.lock is not None and st.lock.state == "stale" and st.lock.operation == verb
    assert st.next_action is not None
    assert st.next_action.command == f"dreamlake provider {verb} -n {name}"


def _finishes(name: str, pdir: Path, project: Path, verb: str, want: str) -> None:
    """Re-running the verb (again while it says to wait for a daemon that is
    starting) ends at ``want``, the record gone at once; a second run agrees."""
    run = suspend if verb == "suspend" else resume
    again = run(name, cwd=project)
    assert not (pdir / INTENT_FILE).exists(), again.to_json()
    deadline = time.monotonic() + 30
    while again.status != want and any("step: wait" in n for n in again.notes):
        assert time.monotonic() < deadline, again.to_json()
        time.sleep(1.0)
        again = run(name, cwd=project)
    assert again.status == want, (again.to_json(), again.notes)
    assert not (pdir / INTENT_FILE).exists()
    st = status(name, cwd=project, probe=False)
    assert st.status == want and st.lock is None, st.to_json()
    once_more = run(name, cwd=project)
    assert once_more.status == want and once_more.files == [], once_more.to_json()


def _interrupt(monkeypatch: pytest.MonkeyPatch, attr: str, after: bool) -> None:
    real = getattr(daemon_suspend, attr)

    def cut(*a: Any, **kw: Any) -> Any:
        if after:
            real(*a, **kw)
        raise KeyboardInterrupt

    monkeypatch.setattr(daemon_suspend, attr, cut)


@pytest.mark.parametrize("after", [False, True], ids=["before-the-stop", "after-the-stop"])
def test_an_interrupted_suspend_finishes_suspended(
    connected: Any, project: Path, monkeypatch: pytest.MonkeyPatch, after: bool
) -> None:
    name, pdir = connected
    with monkeypatch.context() as m:
        _interrupt(m, "suspend_daemon", after)
        with pytest.raises(KeyboardInterrupt):
            suspend(name, cwd=project)
    it = read_intent(pdir)
    assert it is not None and it.verb == "suspend" and it.interrupted
    _reads_interrupted(name, project, "suspend")
    _finishes(name, pdir, project, "suspend", "suspended")


@pytest.mark.parametrize("after", [False, True], ids=["before-the-start", "after-the-start"])
def test_an_interrupted_resume_finishes_connected(
    connected: Any,
    project: Path,
    control_plane: Any,
    monkeypatch: pytest.MonkeyPatch,
    after: bool,
) -> None:
    name, pdir = connected
    assert suspend(name, cwd=project).status == "suspended"
    with monkeypatch.context() as m:
        _interrupt(m, "resume_daemon", after)
        with pytest.raises(KeyboardInterrupt):
            resume(name, cwd=project)
    it = read_intent(pdir)
    assert it is not None and it.verb == "resume" and it.interrupted
    _reads_interrupted(name, project, "resume")
    if after:  # the daemon was started: let it claim, as it would by the next run
        client = Client(control_plane.url, control_plane.admin_token_file.read_text().strip())
        deadline = time.monotonic() + 30
        while client.claims(name)["live"] == 0:
            assert time.monotonic() < deadline, "the daemon started again never claimed"
            time.sleep(0.2)
    _finishes(name, pdir, project, "resume", "connected")


def _cli() -> Path:
    cli = Path(sys.executable).parent / "dreamlake"
    if not cli.is_file():
        pytest.skip(f"needs the console script {cli}")
    return cli


def _kill_when(argv: list[str], project: Path, ready: Any, settle: float) -> None:
    """Run ``argv`` in its own process group; ``kill -9`` the group once ``ready()``
    holds (then ``settle`` seconds later)."""
    proc = subprocess.Popen(
        argv,
        cwd=project,
        env=dict(os.environ),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not ready():
            assert proc.poll() is None, f"{argv[2]} exited before the kill ({proc.returncode})"
            assert time.monotonic() < deadline, "the point to kill at never came"
            time.sleep(0.02)
        time.sleep(settle)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.mark.parametrize("settle", [0.0, 1.0], ids=["at-the-record", "mid-drain"])
def test_kill_9_of_suspend_finishes_suspended(
    connected: Any, project: Path, control_plane: Any, settle: float
) -> None:
    """Killed while the daemon drains a running item (it finishes the item and
    stops on its own), or the moment the record is written."""
    name, pdir = connected
    client = Client(control_plane.url, control_plane.admin_token_file.read_text().strip())
    item = client.submit_work(name, "sleep 8; echo done", queue="default")
    deadline = time.monotonic() + 20
    while client.get_work(str(item["id"]))["state"] == "queued":
        assert time.monotonic() < deadline, "the item was never picked up"
        time.sleep(0.1)
    argv = [str(_cli()), "provider", "suspend", "-n", name]
    _kill_when(argv, project, lambda: (pdir / INTENT_FILE).exists(), settle)
    it = read_intent(pdir)
    assert it is not None and it.verb == "suspend" and it.interrupted
    _reads_interrupted(name, project, "suspend")
    _finishes(name, pdir, project, "suspend", "suspended")
    assert client.get_work(str(item["id"]))["state"] == "succeeded"


@pytest.mark.parametrize("point", ["at-the-record", "once-started"])
def test_kill_9_of_resume_finishes_connected(connected: Any, project: Path, point: str) -> None:
    name, pdir = connected
    assert suspend(name, cwd=project).status == "suspended"
    key = daemon_key(project, name)

    def ready() -> bool:
        if not (pdir / INTENT_FILE).exists():
            return False
        return point == "at-the-record" or daemon_state(LocalShell(), key).state == "running"

    argv = [str(_cli()), "provider", "resume", "-n", name]
    _kill_when(argv, project, ready, 0.0)
    it = read_intent(pdir)
    assert it is not None and it.verb == "resume" and it.interrupted
    _reads_interrupted(name, project, "resume")
    _finishes(name, pdir, project, "resume", "connected")
