"""target_status in the provider's own configuration: read (absent = active), write
one line atomically, everything else in the user's file kept; bad values are errors
with an edit next action."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dreamlake.engine.backends.pulumi.project import PulumiProject
from dreamlake.engine.contract.errors import DreamlakeError
from dreamlake.engine.lifecycle.target import read_target, target_file, write_target
from dreamlake.engine.world.paths import ProviderPaths


def _paths(tmp_path: Path) -> ProviderPaths:
    d = tmp_path / ".dream" / "providers" / "lab"
    (d / "terraform").mkdir(parents=True)
    return ProviderPaths(d)


def test_tfvars_absent_means_active_and_write_keeps_the_rest(tmp_path: Path) -> None:
    p = _paths(tmp_path)
    tfvars = p.terraform / "terraform.tfvars"
    assert read_target(p, "terraform") == "active"  # no file at all
    original = '# my notes\nworkdir = "/srv/w"\n# target_status = "suspended"\nqueues = ["a"]'
    tfvars.write_text(original)
    assert read_target(p, "terraform") == "active"  # a commented line is not a value
    assert write_target(p, "terraform", "suspended") == tfvars
    text = tfvars.read_text()
    assert text.startswith(original)
    assert text.rstrip().endswith('target_status = "suspended"')
    assert read_target(p, "terraform") == "suspended"
    assert write_target(p, "terraform", "suspended") is None  # already so: nothing written
    assert write_target(p, "terraform", "active") == tfvars
    assert read_target(p, "terraform") == "active"
    assert [ln for ln in tfvars.read_text().splitlines() if ln.startswith("target_status")] == [
        'target_status = "active"'
    ]
    assert 'workdir = "/srv/w"' in tfvars.read_text()


def test_tfvars_bad_value_is_an_error_with_an_edit(tmp_path: Path) -> None:
    p = _paths(tmp_path)
    tfvars = p.terraform / "terraform.tfvars"
    tfvars.write_text('target_status = "paused"\n')
    with pytest.raises(DreamlakeError) as exc:
        read_target(p, "terraform")
    assert exc.value.kind == "bad_target"
    assert f"{tfvars}:1" in exc.value.message
    assert exc.value.next_action is not None
    assert exc.value.next_action.kind == "edit_then_continue"


def test_adopt_json(tmp_path: Path) -> None:
    p = _paths(tmp_path)
    p.adopt_json.write_text(json.dumps({"host": "h", "queues": ["q"]}, indent=2))
    assert target_file(p, "none") == p.adopt_json
    assert read_target(p, "none") == "active"
    assert write_target(p, "none", "suspended") == p.adopt_json
    data = json.loads(p.adopt_json.read_text())
    assert data == {"host": "h", "queues": ["q"], "target_status": "suspended"}
    assert read_target(p, "none") == "suspended"


def test_pulumi_stack_config(tmp_path: Path) -> None:
    p = _paths(tmp_path)
    stack = target_file(p, "pulumi")
    stack.parent.mkdir(parents=True, exist_ok=True)
    ns = PulumiProject.of(p.dir).name
    stack.write_text(f"config:\n  {ns}:workdir: /srv/w\n")
    assert read_target(p, "pulumi") == "active"
    write_target(p, "pulumi", "suspended")
    assert stack.read_text() == (
        f"config:\n  {ns}:target_status: suspended\n  {ns}:workdir: /srv/w\n"
    )
    assert read_target(p, "pulumi") == "suspended"
    write_target(p, "pulumi", "active")
    assert f"{ns}:target_status: active" in stack.read_text()
    assert read_target(p, "pulumi") == "active"


def test_a_bad_value_keeps_dream_dir_in_status_and_list(tmp_path: Path) -> None:
    """The next action of a bad target_status repeats --dream-dir: without it the
    command would look in another root."""
    from dreamlake.engine.verbs.create import create
    from dreamlake.engine.verbs.listing import list_providers
    from dreamlake.engine.verbs.status import status

    root = tmp_path / "proj"
    root.mkdir()
    create("lab", "local", dream_dir=str(root), probe=False)
    tfvars = root / ".dream/providers/lab/terraform/terraform.tfvars"
    tfvars.write_text(tfvars.read_text() + 'target_status = "paused"\n')
    want = f"dreamlake provider status -n lab --dream-dir {root}"
    (listed,) = list_providers(dream_dir=str(root), claims=False)
    for res in (status("lab", dream_dir=str(root), probe=False), listed):
        assert (res.status, res.kind) == ("error", "bad_target"), res
        assert res.next_action is not None and res.next_action.command == want
