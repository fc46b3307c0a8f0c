"""Pools: members by ``pool`` in provider.json, free = target suspended; acquire takes
the cheapest (a kept state first) and gives it back when its resume needs a yes;
concurrent ``dreamlake pool acquire`` processes never hand out the same member."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from dreamlake.engine.lifecycle.pool import acquire, pool_status, release
from dreamlake.engine.lifecycle.target import read_target, write_target
from dreamlake.engine.verbs.create import create
from dreamlake.engine.world.paths import ProviderPaths

DREAMLAKE = Path(sys.executable).parent / "dreamlake"


def _member(project: Path, name: str, vendor: str, pool: str | None, target: str) -> ProviderPaths:
    create(name, vendor, cwd=project)
    paths = ProviderPaths(project / ".dream" / "providers" / name)
    record = json.loads(paths.provider_json.read_text())
    if pool:
        record["pool"] = pool
    paths.provider_json.write_text(json.dumps(record, indent=2))
    backend = "none" if vendor == "ssh" else "terraform"
    write_target(paths, backend, target)  # type: ignore[arg-type]
    return paths


def _applied_local(project: Path, name: str, pool: str) -> ProviderPaths:
    """A local member with state (so its status is ``suspended``: state kept)."""
    paths = _member(project, name, "local", pool, "suspended")
    tfvars = paths.terraform / "terraform.tfvars"
    tfvars.write_text(
        f'workdir = "{project}/w-{name}"\nqueues = ["default"]\nworker_name = "{name}"\n'
        'target_status = "suspended"\n'
    )
    (paths.terraform / "terraform.tfstate").write_text(
        json.dumps(
            {
                "version": 4,
                "serial": 1,
                "lineage": "l",
                "outputs": {"worker_host": {"value": "localhost", "type": "string"}},
                "resources": [],
            }
        )
    )
    return paths


def test_status_members_and_the_cheapest_first(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    _member(project, "a-fresh", "ssh", "gpu", "suspended")  # nothing kept: scaffolded
    kept = _applied_local(project, "b-kept", "gpu")
    _member(project, "c-taken", "ssh", "gpu", "active")
    _member(project, "other", "ssh", "cpu", "suspended")
    _member(project, "loner", "ssh", None, "suspended")

    st = pool_status("gpu", cwd=project)
    assert [(m.provider, m.target) for m in st.members] == [
        ("a-fresh", "suspended"),
        ("b-kept", "suspended"),
        ("c-taken", "active"),
    ]
    assert (st.free, st.taken) == (2, 1)
    assert {m.provider: m.status for m in st.members}["b-kept"] == "suspended"

    # b-kept is cheapest (a kept state) although a-fresh sorts first by name. Its
    # resume finds no daemon to bring back (provision: gated by default), so the
    # member is given back and the result asks a person.
    res = acquire("gpu", cwd=project)
    assert res.provider == "b-kept"
    assert res.next_action is not None and res.next_action.approval is True
    assert read_target(kept, "terraform") == "suspended"
    assert any("was not taken" in n for n in res.notes)


def test_release_and_unknown_member(project: Path) -> None:
    _member(project, "m1", "ssh", "gpu", "active")
    res = release("gpu", "nope", cwd=project)
    assert (res.status, res.exit_code) == ("error", 1)
    assert res.next_action is not None and res.next_action.command == "dreamlake pool status gpu"
    res = release("gpu", "m1", cwd=project)
    # m1 has open decisions (no host yet): its target is left alone and it says so
    assert res.provider == "m1" and res.exit_code == 0


def test_empty_and_exhausted(project: Path) -> None:
    res = acquire("gpu", cwd=project)
    assert (res.status, res.kind) == ("error", "pool_empty")
    _member(project, "m1", "ssh", "gpu", "active")
    res = acquire("gpu", cwd=project)
    # Every member taken is the pool's "no", not a tool failure: rc 0.
    assert (res.status, res.kind, res.exit_code) == ("needs_input", "pool_exhausted", 0)
    assert res.next_action is not None and res.next_action.command == "dreamlake pool status gpu"


@pytest.mark.skipif(not DREAMLAKE.is_file(), reason=f"needs the console script {DREAMLAKE}")
def test_concurrent_acquires_never_share_a_member(project: Path) -> None:
    members = [f"m{i}" for i in range(3)]
    for m in members:
        _member(project, m, "ssh", "gpu", "suspended")
    env = dict(os.environ)
    procs = [
        subprocess.Popen(
            [str(DREAMLAKE), "pool", "acquire", "gpu", "--json"],
            cwd=project,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(5)
    ]
    outs: list[dict[str, Any]] = []
    for p in procs:
        stdout, _stderr = p.communicate(timeout=120)
        outs.append(json.loads(stdout))
    got = sorted(o["provider"] for o in outs if o.get("kind") != "pool_exhausted")
    assert got == members, outs  # each member once
    assert sum(o.get("kind") == "pool_exhausted" for o in outs) == 2, outs
    for m in members:
        assert read_target(ProviderPaths(project / ".dream" / "providers" / m), "none") == "active"


@pytest.mark.parametrize("pool", [".hidden", "a/b", ""])
def test_a_pool_name_that_is_a_path_is_an_error_result(project: Path, pool: str) -> None:
    """Not a traceback: an error (rc 1) whose next action lists the providers."""
    dd = str(project)
    for res in (acquire(pool, dream_dir=dd), release(pool, "m1", dream_dir=dd)):
        assert (res.status, res.kind, res.exit_code) == ("error", "usage", 1), res
        assert "not a pool name" in (res.error or "")
        assert res.next_action is not None
        assert res.next_action.command == f"dreamlake provider list --dream-dir {project}"
    assert not (project / ".dream" / "pools").exists()


def test_a_member_with_a_bad_target_is_neither_free_nor_a_traceback(project: Path) -> None:
    paths = _member(project, "m1", "ssh", "gpu", "suspended")
    data = json.loads(paths.adopt_json.read_text())
    data["target_status"] = "paused"
    paths.adopt_json.write_text(json.dumps(data))
    st = pool_status("gpu", cwd=project)
    assert [(m.provider, m.target, m.status) for m in st.members] == [("m1", "invalid", "error")]
    assert (st.free, st.taken) == (0, 1)
    res = acquire("gpu", cwd=project)
    # Every member taken is the pool's "no", not a tool failure: rc 0.
    assert (res.status, res.kind, res.exit_code) == ("needs_input", "pool_exhausted", 0)
