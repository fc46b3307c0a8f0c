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
HIDDEN = {sorted(EXTRAS["server"] + ("starlette", "httptools", "uvloop", "psycopg2"))!r}

class _Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, _Refuse())
which, *args = sys.argv[1:]
sys.argv = [which, *args]
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
