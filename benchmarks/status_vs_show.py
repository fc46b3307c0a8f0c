"""Wall and CPU time of `dreamlake provider status --json` next to `terraform show
-json` on the same applied provider directory (the `local` vendor, offline), plus
`dreamlake --help` and the interpreter's own start; `status` and `--help` both from
this checkout's venv (an editable install) and from a wheel installed into a
throwaway venv, as users install it.

    .venv/bin/python benchmarks/status_vs_show.py [--runs 20]

status reads terraform.tfstate, the lock files and the saved-plan record directly;
`terraform show -json` is what it would cost to ask terraform instead. Also shown:
the in-process `observe_state` call alone. Every terraform binary found is measured.
Each command runs once to warm the bytecode cache, then ``--runs`` times (farm-bench
style); the two ``status`` runs and ``terraform show -json`` take turns, one run of
each per round, so a machine whose speed drifts slows all three alike. The child
processes may write bytecode, as an installed package's users' do
(PYTHONDONTWRITEBYTECODE is dropped for them).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from dreamlake.engine.backends.terraform import observe_state
from dreamlake.engine.backends.terraform.binaries import available
from dreamlake.engine.settings.usercache import RACY_SECONDS
from dreamlake.engine.verbs.apply import apply
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.plan import plan

TFVARS = 'workdir = "/tmp/nymph-bench"\nqueues = ["default"]\nworker_name = "bench-1"\n'


def timed(runs: int, fn: Callable[..., object], *fn_args: object) -> tuple[float, float, float]:
    """(median wall, min wall, median CPU of the child processes) in seconds."""
    fn(*fn_args)  # warm-up
    samples, cpu = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        fn(*fn_args)
        samples.append(time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(samples), min(samples), statistics.median(cpu)


def interleaved(
    runs: int, commands: list[tuple[list[str], Path]], env: dict[str, str]
) -> list[tuple[float, float, float]]:
    """``timed`` for several commands taking turns, one run of each per round: a
    machine whose speed drifts between minutes slows them all alike."""
    for argv, cwd in commands:
        run(argv, cwd, env)  # warm-up
    samples: list[list[tuple[float, float]]] = [[] for _ in commands]
    for _ in range(runs):
        for i, (argv, cwd) in enumerate(commands):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            run(argv, cwd, env)
            wall = time.perf_counter() - t
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
            samples[i].append((wall, cpu))
    return [
        (
            statistics.median(w for w, _ in got),
            min(w for w, _ in got),
            statistics.median(c for _, c in got),
        )
        for got in samples
    ]


def run(argv: list[str], cwd: Path, env: dict[str, str]) -> None:
    subprocess.run(
        argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, check=True
    )


def regular_install(tmp: Path) -> Path:
    """A throwaway venv holding the project as users install it (a wheel, not the
    editable install this checkout's venv has, whose import finder costs every run),
    reaching the dependencies in this venv. Returns its ``dreamlake`` script."""
    repo = Path(__file__).resolve().parent.parent
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    wheels = tmp / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(wheels), str(repo)],
        check=True, capture_output=True,
    )  # fmt: skip
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site),
         *map(str, wheels.glob("*.whl"))],
        check=True, capture_output=True,
    )  # fmt: skip
    deps = next(p for p in sys.path if p.endswith("site-packages"))
    (site / "zz-deps.pth").write_text(deps + "\n")  # after the project's own files
    script = venv / "bin" / "dreamlake"
    script.write_text(  # what pip writes for the console script
        f"#!{venv / 'bin' / 'python'}\nimport sys\nfrom dreamlake.cli.entry import main\n"
        "sys.exit(main())\n"
    )
    script.chmod(0o755)
    return script


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    dreamlake = str(Path(sys.executable).parent / "dreamlake")
    install_tmp = tempfile.TemporaryDirectory(prefix="dl-bench-install-")
    installed = str(regular_install(Path(install_tmp.name)))
    rows: list[tuple[str, str, float, float, float]] = []
    base_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    here = Path.cwd()
    rows.append(
        (
            "-",
            "python -c pass",
            *timed(args.runs, run, [sys.executable, "-c", "pass"], here, base_env),
        )
    )
    rows.append(
        ("-", "dreamlake --help", *timed(args.runs, run, [dreamlake, "--help"], here, base_env))
    )
    rows.append(
        (
            "-",
            "dreamlake --help (wheel install)",
            *timed(args.runs, run, [installed, "--help"], here, base_env),
        )
    )
    for version, binary in available():
        with tempfile.TemporaryDirectory(prefix="dl-bench-") as tmp:
            proj = Path(tmp)
            env = dict(base_env, TERRAFORM_BINARY=binary, TF_CLI_CONFIG_FILE=os.devnull)
            env.setdefault("LAKESHORE_URL", "http://127.0.0.1:9")  # no control plane: bounded
            os.environ.update(TERRAFORM_BINARY=binary, TF_CLI_CONFIG_FILE=os.devnull)
            create("bench", "local", dream_dir=str(proj), probe=False)
            pdir = proj / ".dream/providers/bench"
            (pdir / "terraform/terraform.tfvars").write_text(TFVARS)
            assert plan("bench", dream_dir=str(proj)).status == "ready"
            assert apply("bench", yes=True, dream_dir=str(proj)).status in ("applied", "unclaimed")
            # An agent's loop asks about files it is not editing: let them settle past
            # the caches' racy window, or the first runs would all read the files anew.
            time.sleep(RACY_SECONDS + 0.5)
            tf_dir = pdir / "terraform"
            status_cmd = [dreamlake, "provider", "status", "-n", "bench", "--json"]
            show_cmd = [binary, "show", "-json", "-no-color"]
            measured = interleaved(
                args.runs,
                [(status_cmd, proj), ([installed, *status_cmd[1:]], proj), (show_cmd, tf_dir)],
                env,
            )
            for what, figures in zip(
                (
                    "dreamlake provider status --json",
                    "status --json (wheel install)",
                    "terraform show -json",
                ),
                measured,
                strict=True,
            ):
                rows.append((version, what, *figures))
            rows.append(
                (
                    version,
                    "observe_state() in-process",
                    *timed(args.runs, observe_state, pdir),
                )
            )
    install_tmp.cleanup()
    print(f"{'terraform':<10} {'command':<36} {'median s':>9} {'min s':>8} {'cpu s':>7}")
    for version, what, med, low, cpu in rows:
        print(f"{version:<10} {what:<36} {med:>9.3f} {low:>8.3f} {cpu:>7.3f}")


if __name__ == "__main__":
    main()
