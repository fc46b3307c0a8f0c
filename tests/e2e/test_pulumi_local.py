"""The full `local` loop on the pulumi backend with the real pulumi CLI:
create → needs_input → edit the stack config → scaffolded → plan → ready →
apply → applied (status reads the state files) → plan again.

Skipped where the CLI is missing; it runs for real wherever it exists.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from dreamlake.engine.verbs.apply import apply
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.plan import plan
from dreamlake.engine.verbs.status import status

pytestmark = [
    pytest.mark.needs_pulumi,
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("pulumi") is None,
        reason="needs the pulumi CLI on PATH (runs for real wherever one is; the same flows run "
        "here against the stand-in CLI in tests/engine/backends/pulumi/test_pulumi_automation.py)",
    ),
]


@pytest.fixture(autouse=True)
def _pulumi_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for k in ("PULUMI_BACKEND_URL", "PULUMI_CONFIG_PASSPHRASE", "PULUMI_CONFIG_PASSPHRASE_FILE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("PULUMI_HOME", str(tmp_path / "pulumi-home"))


def test_local_loop(project: Path) -> None:
    dd = str(project)
    res = create("lab", "local", backend="pulumi", dream_dir=dd, probe=False)
    assert res.status == "needs_input", res.to_json()
    assert res.next_action is not None and res.next_action.kind == "edit_then_continue"
    stack_file = Path(res.next_action.file)  # type: ignore[union-attr]
    assert stack_file.name == "Pulumi.lab.yaml"
    text = stack_file.read_text()
    text = text.replace("# dreamlake:workdir: /var/lib/nymph", f"dreamlake:workdir: {project}/work")
    text = text.replace("# dreamlake:queues: [default]", "dreamlake:queues: [default]")
    stack_file.write_text(text.replace("CHANGE-ME", "lab-box"))
    res = create("lab", "local", backend="pulumi", continue_=True, dream_dir=dd, probe=False)
    assert res.status == "scaffolded", res.to_json()

    res = plan("lab", dream_dir=dd)
    assert res.status == "ready", res.to_json()
    assert res.plan is not None and res.plan.add == 0
    pulumi_dir = stack_file.parent
    assert (pulumi_dir / ".passphrase").stat().st_mode & 0o777 == 0o600
    assert status("lab", dream_dir=dd).status == "ready"

    res = apply("lab", yes=True, dream_dir=dd)
    assert res.status in ("applied", "unclaimed"), res.to_json()
    st = status("lab", dream_dir=dd)
    assert st.status in ("applied", "unclaimed"), st.to_json()
    assert st.outputs is not None and st.outputs["worker_host"] == "localhost"
    assert st.outputs["daemon_args"][:5] == [
        "nymph",
        "--provider",
        "lab",
        "--instance-id",
        "lab-box",
    ]
    assert (pulumi_dir / ".state" / ".pulumi").is_dir()

    # a second plan over the deployed stack is clean again
    res = plan("lab", dream_dir=dd)
    assert res.status in ("ready", "applied", "unclaimed"), res.to_json()
