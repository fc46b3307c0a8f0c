"""The daemon install's pure parts: repacked wheels are valid, the daemon's own
imports stay small, and the daemon's command line."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import zipfile
from importlib import metadata
from pathlib import Path

from dreamlake.engine import install


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


def test_the_daemon_imports_no_server_or_cloud_libraries() -> None:
    dists = {d.lower().replace("_", "-") for d in install.imported_distributions()}
    assert "dreamlake" not in dists
    assert not dists & {"fastapi", "sqlalchemy", "uvicorn", "pulumi", "boto3", "fabric", "paramiko"}


def test_daemon_command_line() -> None:
    cfg = install.DaemonConfig(
        provider="lab", server="http://10.0.0.1:7878", namespace="default", token="t",
        queues=("gpu", "cpu"), worker_name="box-1", workdir="/srv/nymph",
    )
    argv = install.nymph_argv(cfg, "/h/.dreamlake/nymph/lab/token")
    assert argv == [
        "--server", "http://10.0.0.1:7878", "--token-file", "/h/.dreamlake/nymph/lab/token",
        "--namespace", "default", "--provider", "lab", "--queues", "gpu,cpu",
        "--instance-id", "box-1", "--workdir", "/srv/nymph",
    ]
    script = install.run_script("/h/d", "/h/d/venv/bin/python", argv)
    assert script.startswith("#!/bin/sh\n")
    assert "exec /h/d/venv/bin/python -c " in script
    assert "from dreamlake.controlplane.nymph.main import main" in script
    assert install.install_dir("/home/u", "lab") == "/home/u/.dreamlake/nymph/lab"
    conf = json.loads(install.daemon_config_json(cfg, "/tok"))
    assert conf["tokenFile"] == "/tok" and "token" not in conf  # the secret stays in its 0600 file
