"""observe_state on the real fixture files laid out as a file backend in tmp:
checkpoints (v3, v4, export form, never deployed), project-scoped and legacy
layouts, gzip / zstd, lock files (held, stale, another host) and pending operations."""

from __future__ import annotations

import gzip
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from dreamlake.engine.backends.pulumi import PulumiBackend
from dreamlake.engine.backends.pulumi.project import PulumiProject
from dreamlake.engine.backends.pulumi.state import BackendFiles, read_checkpoint
from pulumi_helpers import LOCAL_OK, lay_out


def _state_dir(provider_dir: Path) -> Path:
    return provider_dir / "pulumi" / ".state"


def _export_as_checkpoint(export: Path, stack: str = "organization/dreamlake/lab") -> bytes:
    dep = json.loads(export.read_text())
    return json.dumps(
        {"version": dep["version"], "checkpoint": {"stack": stack, "latest": dep["deployment"]}}
    ).encode()


def test_no_state_yet(provider) -> None:
    d = provider(config=LOCAL_OK)
    st = PulumiBackend().observe_state(d)
    assert (st.present, st.resources, st.lock, st.outputs) == (False, 0, None, {})


def test_project_layout_real_export(provider, fixtures: Path) -> None:
    d = provider(config=LOCAL_OK)
    src = fixtures / "stack-export.randompet.v3.111.1.json"
    lay_out(_state_dir(d), src, data=_export_as_checkpoint(src))
    st = PulumiBackend().observe_state(d)
    # Stack + provider + one RandomPet: only the RandomPet counts.
    assert st.present and st.resources == 1
    assert st.lock is None and not st.partial


def test_export_document_form_is_read_too(provider, fixtures: Path) -> None:
    d = provider(config=LOCAL_OK)
    lay_out(_state_dir(d), fixtures / "stack-export.randompet.v3.111.1.json")
    assert PulumiBackend().observe_state(d).resources == 1


def test_legacy_layout_multi_resource_checkpoint(provider, fixtures: Path) -> None:
    d = provider(config=LOCAL_OK)
    lay_out(_state_dir(d), fixtures / "checkpoint-v3.multi-resource.json", project=None)
    st = PulumiBackend().observe_state(d)
    cp = read_checkpoint(fixtures / "checkpoint-v3.multi-resource.json")
    custom = [
        r for r in cp.resources if r.get("custom") and not r["type"].startswith("pulumi:providers:")
    ]
    assert st.present and st.resources == len(custom) > 0
    assert st.resources < len(cp.resources)  # components are not counted


def test_v4_features_checkpoint(provider, fixtures: Path) -> None:
    d = provider(config=LOCAL_OK)
    lay_out(_state_dir(d), fixtures / "checkpoint-v4.features.json")
    st = PulumiBackend().observe_state(d)
    assert st.present and st.resources > 0


def test_legacy_layout_never_deployed(provider, fixtures: Path) -> None:
    d = provider(config=LOCAL_OK)
    lay_out(_state_dir(d), fixtures / "legacy-layout/.pulumi/stacks/dev.json", project=None)
    st = PulumiBackend().observe_state(d)
    assert not st.present and st.resources == 0


def test_layout_follows_meta_yaml(provider, fixtures: Path) -> None:
    """A legacy-placed file is not read when meta.yaml says project-scoped."""
    d = provider(config=LOCAL_OK)
    lay_out(_state_dir(d), fixtures / "checkpoint-v4.features.json", project=None)
    (_state_dir(d) / ".pulumi" / "meta.yaml").write_text("version: 1\n")
    assert not PulumiBackend().observe_state(d).present


def test_secret_outputs_are_left_out(provider, fixtures: Path) -> None:
    d = provider(config=LOCAL_OK)
    src = fixtures / "stack-export.randompassword-secrets.v3.111.1.json"
    data = json.loads(_export_as_checkpoint(src))
    root = data["checkpoint"]["latest"]["resources"][0]
    secret = {
        "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270",
        "plaintext": '"hunter2"',
    }
    root["outputs"] = {"worker_host": "localhost", "password": secret, "nested": [secret]}
    lay_out(_state_dir(d), src, data=json.dumps(data).encode())
    st = PulumiBackend().observe_state(d)
    assert st.outputs == {"worker_host": "localhost", "nested": ["[secret]"]}
    assert "hunter2" not in json.dumps(st.outputs)


def test_gzip_by_magic_bytes_and_newest_variant(provider, fixtures: Path) -> None:
    d = provider(config=LOCAL_OK)
    never = (fixtures / "legacy-layout/.pulumi/stacks/dev.json").read_bytes()
    plain = lay_out(_state_dir(d), fixtures / "x", data=never)
    gz = lay_out(
        _state_dir(d),
        fixtures / "x",
        suffix=".json.gz",
        data=gzip.compress((fixtures / "checkpoint-v4.features.json").read_bytes()),
    )
    os.utime(plain, (1, 1))
    assert PulumiBackend().observe_state(d).present  # the newer .json.gz wins
    os.utime(gz, (1, 1))
    os.utime(plain, None)
    assert not PulumiBackend().observe_state(d).present


def test_zstd_without_a_module_says_so(provider, fixtures: Path) -> None:
    pytest.importorskip("pytest")
    try:
        import zstandard  # noqa: F401

        pytest.skip("a zstd module is installed here; this checks the message without one")
    except ImportError:
        pass
    d = provider(config=LOCAL_OK)
    lay_out(
        _state_dir(d), fixtures / "x", suffix=".json.zst", data=b"\x28\xb5\x2f\xfd" + b"\0" * 16
    )
    st = PulumiBackend().observe_state(d)
    assert not st.present
    assert any("zstd" in n and "zstandard" in n for n in st.notes)


def _lock(provider_dir: Path, *, pid: int, host: str, legacy: bool = False) -> Path:
    pul = _state_dir(provider_dir) / ".pulumi"
    lock_dir = pul / "locks" / ("lab" if legacy else "organization/dreamlake/lab")
    lock_dir.mkdir(parents=True, exist_ok=True)
    p = lock_dir / "18262c43-124d-4f19-b90f-24db3c0a22a3.json"
    p.write_text(
        json.dumps(
            {
                "pid": pid,
                "username": "alice",
                "hostname": host,
                "timestamp": "2026-01-01T10:00:00.123456789+01:00",
            }
        )
    )
    (lock_dir / "18262c43-124d-4f19-b90f-24db3c0a22a3.json.attrs").write_text("{}")
    return p


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_lock_held_by_a_live_process(provider, fixtures: Path) -> None:
    d = provider(config=LOCAL_OK)
    lay_out(_state_dir(d), fixtures / "checkpoint-v4.features.json")
    path = _lock(d, pid=os.getpid(), host=socket.gethostname())
    st = PulumiBackend().observe_state(d)
    assert st.lock is not None and st.lock.state == "held"
    assert st.lock.path == str(path)
    assert st.lock.who == f"alice@{socket.gethostname()} (pid {os.getpid()})"
    assert st.lock.since == "2026-01-01T10:00:00.123456789+01:00"
    assert "pulumi cancel" in (st.lock.detail or "")


def test_stale_lock_left_by_a_dead_process(provider, fixtures: Path) -> None:
    d = provider(config=LOCAL_OK)
    lay_out(_state_dir(d), fixtures / "checkpoint-v4.features.json")
    _lock(d, pid=_dead_pid(), host=socket.gethostname())
    st = PulumiBackend().observe_state(d)
    assert st.lock is not None and st.lock.state == "stale"
    assert "pulumi cancel --yes" in (st.lock.detail or "")
    assert "PULUMI_BACKEND_URL=file://" in (st.lock.detail or "")


def test_lock_from_another_host_cannot_be_judged_stale(provider, fixtures: Path) -> None:
    d = provider(config=LOCAL_OK)
    lay_out(_state_dir(d), fixtures / "checkpoint-v4.features.json")
    _lock(d, pid=_dead_pid(), host="some-other-box")
    st = PulumiBackend().observe_state(d)
    assert st.lock is not None and st.lock.state == "held"
    assert "another host" in (st.lock.detail or "")


def test_legacy_lock_dir(provider, fixtures: Path) -> None:
    d = provider(config=LOCAL_OK)
    lay_out(_state_dir(d), fixtures / "checkpoint-v3.multi-resource.json", project=None)
    _lock(d, pid=_dead_pid(), host=socket.gethostname(), legacy=True)
    st = PulumiBackend().observe_state(d)
    assert st.lock is not None and st.lock.state == "stale"


def _with_pending(src: Path, ops: list[dict]) -> bytes:
    data = json.loads(src.read_text())
    data["checkpoint"]["latest"]["pending_operations"] = ops
    return json.dumps(data).encode()


def test_pending_creates_are_an_interrupted_apply(provider, fixtures: Path) -> None:
    d = provider(config=LOCAL_OK)
    src = fixtures / "checkpoint-v4.features.json"
    res = json.loads(src.read_text())["checkpoint"]["latest"]["resources"][0]
    lay_out(_state_dir(d), src, data=_with_pending(src, [{"resource": res, "type": "creating"}]))
    st = PulumiBackend().observe_state(d)
    assert st.lock is not None and st.lock.state == "stale"
    assert st.lock.operation == "creating" and st.partial
    assert res["urn"] in (st.lock.detail or "")
    assert "refresh --yes --clear-pending-creates" in (st.lock.detail or "")
    assert not st.plan_fresh


def test_pending_update_needs_only_refresh(provider, fixtures: Path) -> None:
    d = provider(config=LOCAL_OK)
    src = fixtures / "checkpoint-v3.multi-resource.json"
    res = json.loads(src.read_text())["checkpoint"]["latest"]["resources"][0]
    lay_out(_state_dir(d), src, data=_with_pending(src, [{"resource": res, "type": "updating"}]))
    detail = PulumiBackend().observe_state(d).lock.detail or ""  # type: ignore[union-attr]
    assert "refresh --yes" in detail and "clear-pending-creates" not in detail


def test_remote_backend_is_not_read(provider, monkeypatch: pytest.MonkeyPatch) -> None:
    d = provider(config=LOCAL_OK)
    monkeypatch.setenv("PULUMI_BACKEND_URL", "s3://bucket/prefix")
    st = PulumiBackend().observe_state(d)
    assert not st.present and any("s3://bucket/prefix" in n for n in st.notes)


def test_backend_url_from_provider_json_wins(
    provider, fixtures: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "shared-state"
    d = provider(config=LOCAL_OK, settings={"pulumi": {"backendUrl": f"file://{elsewhere}"}})
    monkeypatch.setenv("PULUMI_BACKEND_URL", "s3://ignored")
    stack = PulumiProject.of(d).stack
    lay_out(elsewhere, fixtures / "checkpoint-v4.features.json", stack=stack)
    assert PulumiBackend().observe_state(d).present


def test_status_reader_does_not_import_pulumi(provider, fixtures: Path) -> None:
    d = provider(config=LOCAL_OK)
    lay_out(_state_dir(d), fixtures / "checkpoint-v4.features.json")
    code = (
        "import sys; from pathlib import Path\n"
        "from dreamlake.engine.backends import get_backend\n"
        f"st = get_backend('pulumi').observe_state(Path({str(d)!r}))\n"
        "assert st.present\n"
        "assert 'pulumi' not in sys.modules, sorted(m for m in sys.modules if 'pulumi' in m)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_backend_files_paths(tmp_path: Path) -> None:
    legacy = BackendFiles.open(tmp_path, "proj", "dev")
    assert legacy.layout == "legacy"
    assert legacy.lock_dir == tmp_path / ".pulumi/locks/dev"
    (tmp_path / ".pulumi").mkdir()
    (tmp_path / ".pulumi/meta.yaml").write_text("version: 1\n")
    scoped = BackendFiles.open(tmp_path, "proj", "dev")
    assert scoped.stack_base == tmp_path / ".pulumi/stacks/proj/dev"
    assert scoped.lock_dir == tmp_path / ".pulumi/locks/organization/proj/dev"


def test_a_bare_name_stack_on_a_shared_backend_is_noted_not_taken(
    provider, fixtures: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a shared backend a stack named just 'lab' may be anyone's: status does not
    read it as this provider's, and says how to claim it if it is."""
    shared = tmp_path / "shared-state"
    monkeypatch.setenv("PULUMI_BACKEND_URL", f"file://{shared}")
    d = provider(config=LOCAL_OK)
    lay_out(shared, fixtures / "checkpoint-v4.features.json", stack="lab")
    st = PulumiBackend().observe_state(d)
    assert not st.present
    [note] = [n for n in st.notes if "before stacks carried" in n]
    stack = PulumiProject.of(d).stack
    assert f"pulumi stack rename {stack} --stack lab --config-file Pulumi.lab.yaml" in note
