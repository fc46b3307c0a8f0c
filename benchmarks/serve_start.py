"""How much ``lakeshore serve`` costs to start: from exec to the first ``200`` on
``/healthz``, on SQLite, in a fresh data directory (the database made from nothing)
and in an existing one (the same directory, started again).

    python benchmarks/serve_start.py              # 10 starts of each kind
    python benchmarks/serve_start.py --runs 20 --json out.json
    python benchmarks/serve_start.py --before REV # and the code of REV, taking turns

Each start is the real command (the venv's ``lakeshore``, else ``python -m
dreamlake.cli.lakeshore.app``) in a new process on a free port of 127.0.0.1; the
probe asks ``/healthz`` every 10 ms from the moment of exec. CPU is the server
process's own (user + system, from ``/proc/PID/stat`` once the 200 is read, so Linux
only); wall is exec to the 200. Fresh and existing take turns, and with
``--before REV`` so does the code of that revision (``git archive`` of it, laid out
as the ``dreamlake`` package and put first on ``PYTHONPATH``; same venv, same
command). Medians, quartiles, range. Not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from orphans import die_with_parent

ROOT = Path(__file__).resolve().parent.parent
TICKS = os.sysconf("SC_CLK_TCK")


def lakeshore_argv() -> list[str]:
    exe = Path(sys.executable).parent / "lakeshore"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "dreamlake.cli.lakeshore.app"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def healthy(port: int) -> bool:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", "/healthz")
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


def tree_of(rev: str, into: Path) -> Path:
    """``rev``'s code as an importable ``dreamlake`` package under ``into``."""
    src = into / "src"
    src.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    pkg = into / "path" / "dreamlake"
    pkg.mkdir(parents=True)
    for entry in (src / "dreamlake").iterdir():
        (pkg / entry.name).symlink_to(entry)
    for folder in ("engine", "stacks", "templates", "cli", "controlplane"):
        (pkg / folder).symlink_to(src / folder)
    return into / "path"


def one_start(data_dir: Path, path: Path | None = None, timeout: float = 120.0) -> dict[str, float]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKESHORE_")}
    if path is not None:
        env["PYTHONPATH"] = str(path)
    argv = [*lakeshore_argv(), "serve", "--port", str(port), "--data-dir", str(data_dir)]
    began = time.monotonic()
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        preexec_fn=die_with_parent,
    )
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"lakeshore exited: {proc.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
            if healthy(port):
                wall = time.monotonic() - began
                cpu = cpu_seconds(proc.pid)
                return {"wall": wall, "cpu": cpu}
            if time.monotonic() - began > timeout:
                raise RuntimeError(f"no 200 on /healthz in {timeout} s")
            time.sleep(0.01)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def summary(values: list[float]) -> dict[str, float]:
    q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return {
        "median": statistics.median(values),
        "q1": q[0],
        "q3": q[2],
        "min": min(values),
        "max": max(values),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--before", metavar="REV", help="also start REV's code, taking turns")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    work = Path(tempfile.mkdtemp(prefix="serve-start-"))
    sides: dict[str, Path | None] = {"this tree": None}
    if args.before:
        sides = {args.before: tree_of(args.before, work / "before"), **sides}
    results: dict[str, dict[str, list[dict[str, float]]]] = {
        side: {"fresh": [], "existing": []} for side in sides
    }
    try:
        for n, path in enumerate(sides.values()):
            one_start(work / f"existing-{n}", path)  # made once; every later start finds it
        for i in range(args.runs):
            for n, (side, path) in enumerate(sides.items()):
                fresh = work / f"fresh-{n}-{i}"
                results[side]["fresh"].append(one_start(fresh, path))
                shutil.rmtree(fresh, ignore_errors=True)
                results[side]["existing"].append(one_start(work / f"existing-{n}", path))
                print(
                    f"run {i + 1} {side}: fresh {results[side]['fresh'][-1]['cpu']:.2f} s cpu, "
                    f"existing {results[side]['existing'][-1]['cpu']:.2f} s cpu",
                    file=sys.stderr,
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out: dict[str, Any] = {"runs": args.runs, "loadavg_before": load, "sides": {}}
    print(
        f"{'code':<12} {'data dir':<9} {'':<5} "
        + " ".join(f"{k:>7}" for k in ("median", "q1", "q3", "min", "max"))
    )
    for side, kinds in results.items():
        out["sides"][side] = {}
        for kind, runs in kinds.items():
            out["sides"][side][kind] = {}
            for measure in ("cpu", "wall"):
                s = summary([r[measure] for r in runs])
                out["sides"][side][kind][measure] = s
                print(
                    f"{side[:12]:<12} {kind:<9} {measure:<5} "
                    + " ".join(f"{s[k]:7.3f}" for k in ("median", "q1", "q3", "min", "max"))
                )
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
