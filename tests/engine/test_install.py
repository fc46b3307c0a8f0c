"""The daemon install's pure parts: repacked wheels are valid, the daemon's own
imports stay small, and the daemon's command line."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import stat
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from dreamlake.engine import install
from dreamlake.engine.remote import LocalShell


def test_repack_makes_a_valid_wheel(tmp_path: Path) -> None:
    whl = install.repack(metadata.distribution("typing_extensions"), tmp_path)
    assert whl.name.startswith("typing_extensions-") and whl.name.endswith("-py3-none-any.whl")
    with zipfile.ZipFile(whl) as zf:
        names = set(zf.namelist())
        record = next(n for n in names if n.endswith(".dist-info/RECORD"))
        assert any(n.endswith(".dist-info/WHEEL") for n in names)
        assert not any("__pycache__" in n or n.endswith("INSTALLER") for n in names)
        rows = list(csv.reader(io.StringIO(zf.read(record).decode())))
        for path, digest, _size in rows:
            if path == record:
                continue
            want = base64.urlsafe_b64encode(hashlib.sha256(zf.read(path)).digest()).rstrip(b"=")
            assert digest == "sha256=" + want.decode()
    assert install.repack(metadata.distribution("typing_extensions"), tmp_path) == whl  # cached


def test_concurrent_repacks_leave_one_whole_wheel(tmp_path: Path) -> None:
    """Two connects repacking the same distribution at once: each writes through a
    temp file of its own (a shared one could be truncated under the other's rename)."""
    from concurrent.futures import ThreadPoolExecutor

    dist = metadata.distribution("pyyaml")
    with ThreadPoolExecutor(8) as pool:
        wheels = set(pool.map(lambda _i: install.repack(dist, tmp_path), range(8)))
    assert len(wheels) == 1
    (whl,) = wheels
    assert [p.name for p in tmp_path.iterdir()] == [whl.name]  # no temp file left behind
    with zipfile.ZipFile(whl) as zf:
        assert zf.testzip() is None


def test_the_daemon_imports_no_server_or_cloud_libraries() -> None:
    dists = {d.lower().replace("_", "-") for d in install.imported_distributions()}
    assert "dreamlake" not in dists
    assert not dists & {"fastapi", "sqlalchemy", "uvicorn", "pulumi", "boto3", "fabric", "paramiko"}


def test_daemon_command_line() -> None:
    cfg = install.DaemonConfig(
        provider="lab",
        server="http://10.0.0.1:7878",
        namespace="default",
        token="t",
        queues=("gpu", "cpu"),
        worker_name="box-1",
        workdir="/srv/nymph",
    )
    argv = install.nymph_argv(cfg, "/h/.dreamlake/nymph/lab/token")
    assert argv == [
        "--server",
        "http://10.0.0.1:7878",
        "--token-file",
        "/h/.dreamlake/nymph/lab/token",
        "--namespace",
        "default",
        "--provider",
        "lab",
        "--queues",
        "gpu,cpu",
        "--instance-id",
        "box-1",
        "--workdir",
        "/srv/nymph",
        "--pid-file",
        "/h/.dreamlake/nymph/lab/nymph.pid",
    ]
    script = install.run_script("/h/d", "/h/d/venv/bin/python", argv)
    assert script.startswith("#!/bin/sh\n")
    assert "exec /h/d/venv/bin/python -c " in script
    assert "from dreamlake.controlplane.nymph.main import main" in script
    assert install.install_dir("/home/u", "lab") == "/home/u/.dreamlake/nymph/lab"
    conf = json.loads(install.daemon_config_json(cfg, "/tok"))
    assert conf["tokenFile"] == "/tok" and "token" not in conf  # the secret stays in its 0600 file


@pytest.mark.slow
def test_install_on_this_machine_then_refresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real install through the local shell into a temp HOME: the venv imports the
    daemon, the token is 0600; a second run changes nothing; a changed project wheel
    is reinstalled into the same venv without recreating it."""
    home = tmp_path / "home"
    home.mkdir()
    sh = LocalShell(env={"HOME": str(home)})
    cfg = install.DaemonConfig("lab", "http://127.0.0.1:9", "default", "s3cret", ("q",))
    said: list[str] = []
    first = install.install(sh, cfg, progress=said.append)
    d = Path(first.dir)
    assert d == home / ".dreamlake" / "nymph" / "lab" and first.changed
    assert (d / "token").read_text() == "s3cret"
    assert stat.S_IMODE((d / "token").stat().st_mode) == 0o600
    assert stat.S_IMODE((d / "run.sh").stat().st_mode) == 0o700
    assert (
        "--token-file" in (d / "run.sh").read_text() and "s3cret" not in (d / "run.sh").read_text()
    )
    ok = sh.run(f"cd / && {first.python} -c 'import dreamlake.controlplane.nymph.daemon'")
    assert ok.ok, ok.stderr

    # Pin the project wheel: the checkout may change under a running suite.
    built = install.build_project_wheel()
    monkeypatch.setattr(install, "build_project_wheel", lambda *a, **k: built)
    again = install.install(sh, cfg)
    again = install.install(sh, cfg)
    assert not again.changed

    stamp = json.loads((d / "installed.json").read_text())
    project = next(n for n in stamp["wheels"] if n.startswith("dreamlake-"))
    stamp["wheels"][project] = "0" * 64
    (d / "installed.json").write_text(json.dumps(stamp, sort_keys=True))
    marker = d / "venv" / "marker"
    marker.write_text("kept")
    said.clear()
    third = install.install(sh, cfg, progress=said.append)
    assert third.changed and marker.exists()  # refreshed in place, not recreated
    assert any("installing the daemon" in s for s in said)
