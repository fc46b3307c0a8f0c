"""The base install drives providers without the server stack; a command that needs
a missing extra says which, with the ``pip install`` line as its next action.

The base install is simulated by hiding the server extra's modules from the import
system (a meta-path finder that refuses them), so no network is needed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from dreamlake.cli.extras import EXTRAS

HIDE = f"""
import sys
HIDDEN = {sorted(EXTRAS["server"] + EXTRAS["pulumi"] + ("starlette", "httptools", "uvloop", "psycopg", "httpx", "pulumi_aws", "pulumi_gcp", "pulumi_kubernetes"))!r}

class _Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, _Refuse())
which, *args = sys.argv[1:]
sys.argv = [which, *args]
if which == "python":
    exec(args[0])
    raise SystemExit(0)
if which == "dreamlake":
    from dreamlake.cli.entry import main
else:
    from dreamlake.cli.lakeshore.app import main
try:
    rc = main()
    if which == "dreamlake":
        raise SystemExit(rc)
finally:
    leaked = sorted(m for m in sys.modules if m.split(".")[0] in HIDDEN)
    if leaked:
        print("LEAKED", leaked, file=sys.stderr)
"""


def _run(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", HIDE, *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": str(cwd), "DREAMLAKE_CACHE_DIR": "off"},
    )


def test_serve_without_the_server_extra_names_the_install_line(tmp_path: Path) -> None:
    out = _run("lakeshore", "serve", cwd=tmp_path)
    assert out.returncode == 1, out.stderr
    assert "error: lakeshore serve needs the server extra (fastapi" in out.stderr
    assert "next: pip install 'dreamlake[server]'" in out.stderr
    assert "Traceback" not in out.stderr


def test_the_base_install_drives_a_provider(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    create = _run(
        "dreamlake", "provider", "create", "-n", "lab", "--provider", "local",
        "--dream-dir", str(root), "--json", cwd=tmp_path,
    )  # fmt: skip
    assert create.returncode == 0, create.stderr
    assert json.loads(create.stdout)["status"] in ("needs_input", "scaffolded")
    status = _run(
        "dreamlake", "provider", "status", "-n", "lab", "--dream-dir", str(root), "--json",
        cwd=tmp_path,
    )  # fmt: skip
    assert status.returncode == 0, status.stderr
    assert "LEAKED" not in create.stderr + status.stderr


def test_the_registry_commands_are_clients_only(tmp_path: Path) -> None:
    out = _run(
        "lakeshore", "providers", "list", "--server", "http://127.0.0.1:9", "--json",
        cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 1
    assert "Traceback" not in out.stderr and "LEAKED" not in out.stderr
    assert json.loads(out.stdout)["nextAction"]["command"].startswith("lakeshore serve")


def test_the_pulumi_backend_without_its_sdk_names_the_install_line(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    out = _run(
        "dreamlake", "provider", "create", "-n", "lab", "--provider", "local",
        "--backend", "pulumi", "--dream-dir", str(root), "--json", cwd=tmp_path,
    )  # fmt: skip
    body = json.loads(out.stdout)
    assert out.returncode != 0 and body["status"] == "error", out.stderr
    assert body["kind"] == "no_binary"
    assert body["nextAction"]["command"] == "pip install 'dreamlake[pulumi]'"
    assert body["nextAction"]["approval"] is True
    assert "the `pulumi` extra" in body["error"]
    assert not (root / ".dream" / "providers" / "lab").exists()  # nothing scaffolded
    assert "Traceback" not in out.stderr and "LEAKED" not in out.stderr


def test_a_component_without_its_cloud_sdk_names_the_extra(tmp_path: Path) -> None:
    code = (
        "try:\n"
        "    from dreamlake.stacks.ec2 import GpuWorkers\n"
        "except ModuleNotFoundError as exc:\n"
        "    print(exc.name, '|', exc)\n"
    )
    out = _run("python", code, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    name, message = out.stdout.strip().split(" | ")
    assert name == "pulumi"
    assert message.endswith("pip install 'dreamlake[pulumi-clouds]'")
    assert "GpuWorkers is built with the Pulumi SDK and the cloud's provider SDK" in message


def test_connect_without_a_control_plane_installs_the_server_first(tmp_path: Path) -> None:
    """No token and no server extra: `nohup lakeshore serve` could not start, so the
    next action installs the extra (flagged for a person) and the message says why."""
    root = tmp_path / "proj"
    root.mkdir()
    args = ("--dream-dir", str(root), "--json")
    create = _run(
        "dreamlake", "provider", "create", "-n", "lab", "--provider", "ssh", *args, cwd=tmp_path
    )
    assert create.returncode == 0, create.stderr
    # the queues an ssh host serves are the user's decision: set, so connect goes on
    chosen = _run(
        "dreamlake", "provider", "set", "-n", "lab", "queues=default", *args, cwd=tmp_path
    )
    assert chosen.returncode == 0, chosen.stderr
    out = _run(
        "dreamlake", "provider", "connect", "-n", "lab", "--host", "127.0.0.1", *args, cwd=tmp_path
    )
    body = json.loads(out.stdout)
    assert body["kind"] == "no_lakeshore", out.stderr
    assert body["nextAction"] == {
        "kind": "shell", "command": "pip install 'dreamlake[server]'", "approval": True,
    }  # fmt: skip
    assert "LEAKED" not in out.stderr
