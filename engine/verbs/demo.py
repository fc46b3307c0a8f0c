"""The README demo: on a fresh machine with no cloud account, walk a ``local``
provider from create to connected, printing each step's prose, then clean up.

    create → needs_input → (edit terraform.tfvars) → plan → ready → apply → applied
    → status (unclaimed) → connect → connected

It starts the embedded control plane (``lakeshore serve`` on 127.0.0.1, a free port,
a temporary data directory), works in a temporary project folder, and at the end
stops the daemon and the server and removes both folders.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..contract.result import ProviderLifecycleResult

DEMO_NAME = "demo-local"


@dataclass
class EmbeddedServer:
    """A ``lakeshore serve`` subprocess on 127.0.0.1."""

    url: str
    data_dir: Path
    proc: subprocess.Popen[bytes]

    @property
    def admin_token_file(self) -> Path:
        return self.data_dir / "admin.token"

    def env(self) -> dict[str, str]:
        """What the engine and the CLI need to find this server."""
        return {
            "LAKESHORE_URL": self.url,
            "LAKESHORE_DATA_DIR": str(self.data_dir),
            "LAKESHORE_TOKEN_FILE": str(self.admin_token_file),
        }

    def log_tail(self) -> str:
        p = self.data_dir / "server.log"
        return p.read_text(errors="replace")[-2000:] if p.exists() else ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _lakeshore_argv() -> list[str]:
    exe = Path(sys.executable).parent / "lakeshore"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "dreamlake.cli.lakeshore.app"]


def start_server(
    data_dir: Path, *, port: int | None = None, live_seconds: float = 5.0, timeout: float = 60.0
) -> EmbeddedServer:
    """Start ``lakeshore serve`` on 127.0.0.1 with its own data dir; wait until healthy."""
    port = port or _free_port()
    data_dir.mkdir(parents=True, exist_ok=True)
    argv = [
        *_lakeshore_argv(),
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--data-dir",
        str(data_dir),
        "--live-seconds",
        str(live_seconds),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKESHORE_")}
    with (data_dir / "server.log").open("ab") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env)
    srv = EmbeddedServer(f"http://127.0.0.1:{port}", data_dir, proc)
    deadline = time.monotonic() + timeout
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"lakeshore serve exited: {srv.log_tail()}")
        try:
            with opener.open(srv.url + "/healthz", timeout=2) as r:
                if r.status == 200 and srv.admin_token_file.exists():
                    return srv
        except OSError:
            pass
        time.sleep(0.2)
    srv.stop()
    raise RuntimeError(
        f"lakeshore serve did not become healthy within {timeout:.0f}s: {srv.log_tail()}"
    )


@contextlib.contextmanager
def patched_env(values: dict[str, str]) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _render(res: ProviderLifecycleResult) -> str:
    from dreamlake.cli.render import render

    return render(res)


def resolve_local_decisions(tfvars: Path, workdir: Path, worker_name: str) -> None:
    """Give the local template's decisions values, the way a person would edit the file."""
    text = tfvars.read_text(encoding="utf-8")
    values = {
        "workdir": f'"{workdir}"',
        "queues": '["default"]',
        "worker_name": f'"{worker_name}"',
    }
    for key, value in values.items():
        pattern = re.compile(rf"^#?\s*{key}\s*=.*$", re.M)
        line = f"{key} = {value}"
        text = pattern.sub(line, text, count=1) if pattern.search(text) else text + line + "\n"
    tmp = tfvars.with_name(f".{tfvars.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, tfvars)


def _daemon_key(project: Path, name: str) -> str:
    """The key the demo's daemon runs under (its provider's identity)."""
    import json

    from ..daemon.key import key_of

    try:
        data = json.loads((project / ".dream" / "providers" / name / "provider.json").read_text())
        return key_of(str(data["id"]))
    except (OSError, ValueError, KeyError, TypeError):
        return name


def run_demo(out: Callable[[str], None] | None = None, *, keep: bool = False) -> int:
    """The demo. Returns 0 when the provider reached ``connected``, else 1."""
    say = out or (lambda s: print(s, flush=True))
    from ..daemon import start as supervise
    from ..remote import LocalShell
    from .connect import connect
    from .create import create

    base = Path(tempfile.mkdtemp(prefix="dreamlake-demo-"))
    project, data = base / "project", base / "lakeshore"
    project.mkdir()
    server: EmbeddedServer | None = None
    ok = False
    name = _free_name()
    try:
        say(f"demo: a `local` provider in {project}, on this machine, no cloud account")
        say(
            f"demo: starting the embedded control plane (lakeshore serve on 127.0.0.1, data in {data})"
        )
        server = start_server(data)
        say(f"demo: control plane at {server.url}")
        with patched_env(server.env()):
            step = _Steps(say, project)
            res = step(
                f"dreamlake provider create -n {name} --provider local",
                lambda: create(name, "local", cwd=project),
            )
            if res.status != "needs_input":
                return 1
            tfvars = project / ".dream" / "providers" / name / "terraform" / "terraform.tfvars"
            resolve_local_decisions(tfvars, base / "work", "demo-worker")
            say(f"\ndemo: resolved every decision by editing {tfvars}")
            res = step(
                f"dreamlake provider create -n {name} --continue",
                lambda: create(name, "local", cwd=project, continue_=True),
            )
            if res.status != "scaffolded":
                return 1
            from .apply import apply
            from .plan import plan

            res = step(f"dreamlake provider plan -n {name}", lambda: plan(name, cwd=project))
            if res.status != "ready":
                return 1
            res = step(
                f"dreamlake provider apply -n {name} --yes",
                lambda: apply(name, yes=True, cwd=project),
            )
            if res.status not in ("applied", "unclaimed"):
                return 1
            from .status import status

            res = step(f"dreamlake provider status -n {name}", lambda: status(name, cwd=project))
            if res.status != "unclaimed":
                return 1
            res = step(
                f"dreamlake provider connect -n {name}",
                lambda: connect(name, cwd=project, progress=lambda m: say(f"   … {m}")),
            )
            ok = res.status == "connected"
        return 0 if ok else 1
    except Exception as exc:  # the demo reports, it never dumps a traceback
        say(f"✗ demo failed: {exc}")
        if server is not None and server.proc.poll() is not None:
            say(server.log_tail())
        return 1
    finally:
        say("\ndemo: cleaning up — stopping the daemon and the control plane")
        key = _daemon_key(project, name)
        with contextlib.suppress(Exception):
            supervise.stop(LocalShell(), key)
        if server is not None:
            server.stop()
        if not keep:
            home = os.path.expanduser("~")
            shutil.rmtree(f"{home}/.dreamlake/nymph/{key}", ignore_errors=True)
            shutil.rmtree(base, ignore_errors=True)
        say(
            "demo: "
            + ("done — the provider reached connected" if ok else "did not reach connected")
        )


def _free_name() -> str:
    """``demo-local``. Two demos at once never stop each other's daemon: each one's
    provider has an identity of its own, and the daemon is keyed by it."""
    return DEMO_NAME


class _Steps:
    def __init__(self, say: Callable[[str], None], project: Path) -> None:
        self.say = say
        self.project = project

    def __call__(
        self, title: str, fn: Callable[[], ProviderLifecycleResult]
    ) -> ProviderLifecycleResult:
        self.say(f"\n$ {title}")
        cwd = os.getcwd()
        os.chdir(self.project)  # prose shows paths relative to the project
        try:
            res = fn()
            self.say(_render(res))
        finally:
            os.chdir(cwd)
        return res
