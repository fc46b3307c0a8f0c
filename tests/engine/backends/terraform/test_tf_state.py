"""observe_state on provider directories built from the fixture files:
no terraform runs on this path."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dreamlake.engine.backends.terraform import observe_state
from dreamlake.engine.backends.terraform.state import remote_backend, stale_hint
from dreamlake.engine.backends.terraform.statefile import read_state
from shared_fixtures import own_manifest, terraform_corpora


def _provider(tmp_path: Path) -> tuple[Path, Path]:
    pdir = tmp_path / "p"
    tf = pdir / "terraform"
    tf.mkdir(parents=True)
    (tf / "main.tf").write_text('output "a" { value = 1 }\n')
    return pdir, tf


def test_no_terraform_dir_and_no_state(tmp_path: Path) -> None:
    assert not observe_state(tmp_path / "nothing").present
    pdir, _ = _provider(tmp_path)
    s = observe_state(pdir)
    assert not s.present and s.lock is None and not s.plan_fresh


def test_outputs_only_state_is_present(tmp_path: Path, fixtures: Path) -> None:
    pdir, tf = _provider(tmp_path)
    shutil.copy(fixtures / "tfstate/outputs-only.tfstate", tf / "terraform.tfstate")
    s = observe_state(pdir)
    assert s.present and s.resources == 0 and s.outputs == {"test": "test"} and s.lock is None


@pytest.mark.parametrize("root", terraform_corpora(), ids=lambda p: p.parts[-2])
def test_every_fixture_state(tmp_path: Path, root: Path) -> None:
    for f in sorted((root / "tfstate").glob("*.tfstate")):
        pdir, tf = _provider(tmp_path / f.stem)
        shutil.copy(f, tf / "terraform.tfstate")
        s = observe_state(pdir)
        assert s.present and s.lock is None, f
        assert s.resources == read_state(f).resources


def test_killed_first_apply_is_stale_and_partial(tmp_path: Path, fixtures: Path) -> None:
    pdir, tf = _provider(tmp_path)
    crash = fixtures / "generated-locally/crash-first-apply"
    shutil.copy(crash / "terraform.tfstate", tf / "terraform.tfstate")
    shutil.copy(crash / ".terraform.tfstate.lock.info", tf / ".terraform.tfstate.lock.info")
    s = observe_state(pdir)
    assert s.lock is not None and s.lock.state == "stale" and s.partial and not s.present
    made = own_manifest()["crash-first-apply"]["lock"]
    assert s.lock.who == made["Who"] and s.lock.operation == "apply"
    assert s.lock.since == made["Created"]


def test_killed_apply_that_left_resources_is_stale_and_present(
    tmp_path: Path, fixtures: Path
) -> None:
    """kill -9 after one resource was created: the state holds what was done."""
    pdir, tf = _provider(tmp_path)
    crash = fixtures / "generated-locally/crash-mid-apply"
    shutil.copy(crash / "terraform.tfstate", tf / "terraform.tfstate")
    shutil.copy(crash / ".terraform.tfstate.lock.info", tf / ".terraform.tfstate.lock.info")
    s = observe_state(pdir)
    assert s.lock is not None and s.lock.state == "stale" and s.resources >= 1


def test_stale_lock_info_alone(tmp_path: Path, fixtures: Path) -> None:
    pdir, tf = _provider(tmp_path)
    shutil.copy(fixtures / "tfstate/lifecycle.tfstate", tf / "terraform.tfstate")
    shutil.copy(fixtures / "lock/.terraform.tfstate.lock.info", tf / ".terraform.tfstate.lock.info")
    s = observe_state(pdir)
    assert s.lock is not None and s.lock.state == "stale" and not s.partial and s.present


def test_empty_state_without_lock_info_and_errored_state(tmp_path: Path) -> None:
    pdir, tf = _provider(tmp_path)
    (tf / "terraform.tfstate").write_text("")
    s = observe_state(pdir)
    assert s.lock is None and not s.partial and not s.present  # terraform: "no state"
    (tf / "terraform.tfstate").unlink()
    (tf / "errored.tfstate").write_text("{}")
    s = observe_state(pdir)
    assert s.lock is not None and "errored.tfstate" in (s.lock.detail or "") and s.partial


_HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("locked", flush=True)
time.sleep(60)
"""


def test_held_lock_and_a_running_plan(tmp_path: Path, fixtures: Path) -> None:
    pdir, tf = _provider(tmp_path)
    (tf / "terraform.tfstate").write_text("")
    info = (fixtures / "generated-locally/lock-info-during-apply.json").read_text()
    (tf / ".terraform.tfstate.lock.info").write_text(info)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(tf / "terraform.tfstate")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        s = observe_state(pdir)
        assert s.lock is not None and s.lock.state == "held" and s.lock.operation == "apply"
        # A plan holding the lock only reads: a note, not "applying".
        (tf / ".terraform.tfstate.lock.info").write_text(
            info.replace("OperationTypeApply", "OperationTypePlan")
        )
        s = observe_state(pdir)
        assert s.lock is None and any("plan is running" in n for n in s.notes)
    finally:
        holder.kill()
        holder.wait()


def test_remote_backend_detection(tmp_path: Path) -> None:
    _, tf = _provider(tmp_path)
    assert remote_backend(tf) is None
    (tf / "backend.tf").write_text('terraform {\n  backend "s3" {\n    bucket = "b"\n  }\n}\n')
    assert remote_backend(tf) == "s3"
    (tf / "backend.tf").write_text('terraform {\n  backend "local" {}\n}\n')
    assert remote_backend(tf) is None


def test_remote_backend_before_init_is_a_note(tmp_path: Path) -> None:
    pdir, tf = _provider(tmp_path)
    (tf / "backend.tf").write_text('terraform {\n  backend "s3" {}\n}\n')
    s = observe_state(pdir)
    assert not s.present and any("remote state not read" in n for n in s.notes)


def test_stale_hint_only_for_cloud_state(fixtures: Path, tmp_path: Path) -> None:
    assert stale_hint(read_state(fixtures / "tfstate/lifecycle.tfstate")) is None
    # The same real state, its resources re-pointed at a registry provider.
    data = json.loads((fixtures / "tfstate/modules-two-resources.tfstate").read_text())
    for r in data["resources"]:
        r["provider"] = 'provider["registry.terraform.io/hashicorp/test"]'
    p = tmp_path / "s.tfstate"
    p.write_text(json.dumps(data))
    old = time.time() - 3 * 86400
    os.utime(p, (old, old))
    hint = stale_hint(read_state(p))
    assert hint is not None and "3 days" in hint and "plan" in hint
