"""SLURM: an SSH session to the login node (the key from a secret), then ``sbatch``
of a job script that runs the launch's command (``direct``) or fetches and runs the
daemon in the foreground (``daemon``). Instances are job ids; live state comes from
``squeue`` (``scontrol show job`` once a job left the queue); terminate is
``scancel``. The job name carries the client token, so a retried launch finds the
job it already submitted instead of submitting another. With ``start_within``
(seconds) a job SLURM would not start that soon is refused before it is submitted
(``sbatch --test-only``): a full partition says so instead of queueing it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from . import bootstrap, sshconn
from .errors import LaunchRejected
from .order import LaunchOrder

_JOB_ID = re.compile(r"^(\d+)")
TAIL_BYTES = 4000


def available() -> str | None:
    return None


def job_script(order: LaunchOrder, index: int) -> str:
    """The sbatch script of the index-th job (pure)."""
    kw = order.kwargs
    name = order.name_for(index)
    lines = ["#!/bin/sh", f"#SBATCH --job-name={name}", "#SBATCH --output=%x-%j.out"]
    for key, flag in (
        ("partition", "--partition"),
        ("account", "--account"),
        ("time", "--time"),
        ("nodes", "--nodes"),
        ("gres", "--gres"),
    ):
        if kw.get(key):
            lines.append(f"#SBATCH {flag}={kw[key]}")
    if kw.get("workdir"):
        lines.append(f"#SBATCH --chdir={kw['workdir']}")
    if order.dispatch == "daemon":
        body = bootstrap.script(
            order,
            index,
            instance_id=name,
            foreground=True,
            install_dir=f"$HOME/.lakeshore/nymph/{order.provider}",
        )
        body = body.split("\n", 1)[1]  # the #!/bin/sh line is already there
    else:
        command = order.run.get("command")
        if not isinstance(command, str) or not command:
            raise LaunchRejected("a direct SLURM launch runs a command: pass command in the launch")
        body = command + "\n"
    return "\n".join(lines) + "\n" + body


def _existing(shell: Any, name: str) -> str | None:
    res = shell.run(f"squeue -h -n {shlex.quote(name)} -o %i", timeout=30)
    ids = res.stdout.split()
    return ids[0] if res.ok and ids else None


_STARTS_AT = re.compile(r"to start at (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)")


def start_delay(test_only: str, now: str) -> float | None:
    """Seconds from ``now`` until the start ``sbatch --test-only`` predicts (both the
    controller's local ``%Y-%m-%dT%H:%M:%S``), or None when it predicts none (pure)."""
    m = _STARTS_AT.search(test_only)
    if not m:
        return None
    try:
        start = datetime.fromisoformat(m.group(1))
        return (start - datetime.fromisoformat(now.strip())).total_seconds()
    except ValueError:
        return None


def _starts_within(shell: Any, script: str, within: float) -> None:
    """Refuse the job when SLURM would not start it within ``within`` seconds: a full
    partition queues a job rather than turning it down, and a queue with another
    provider to go to should go there (``capacity.refusal`` reads the sentence)."""
    ask = "sbatch --test-only <<'LAKESHORE_JOB' 2>&1; date +%Y-%m-%dT%H:%M:%S\n"
    res = shell.run(f"{ask}{script}LAKESHORE_JOB\n", timeout=60)
    lines = res.stdout.strip().splitlines()
    now, said = (lines[-1], "\n".join(lines[:-1])) if lines else ("", "")
    delay = start_delay(said, now)
    if delay is None:
        raise LaunchRejected(f"sbatch refused the job: {said.strip()[-400:] or res.tail(4)}")
    if delay > within:
        raise LaunchRejected(
            f"SLURM partition full: the job would start in {delay:.0f} s, more than "
            f"start_within ({within:g} s)"
        )


def validate(order: LaunchOrder) -> None:
    """Offline: a login node, a command for direct dispatch, a number of seconds for
    ``start_within``."""
    sshconn.hosts(order.kwargs)
    within = order.kwargs.get("start_within")
    if within is not None and (
        isinstance(within, bool) or not isinstance(within, int | float) or within < 0
    ):
        raise LaunchRejected("start_within must be a number of seconds ≥ 0")
    if order.dispatch != "daemon" and not order.run.get("command"):
        raise LaunchRejected("a direct SLURM launch runs a command: pass command in the launch")


def launch(order: LaunchOrder) -> dict[str, Any]:
    host = sshconn.hosts(order.kwargs)[0]
    out: list[dict[str, Any]] = []
    with sshconn.session(order.kwargs, host) as shell:
        for i in range(order.count):
            name = order.name_for(i)
            job_id = _existing(shell, name)
            if job_id is None:
                script = job_script(order, i)
                within = order.kwargs.get("start_within")
                if within is not None:
                    _starts_within(shell, script, float(within))
                res = shell.run(
                    f"sbatch --parsable <<'LAKESHORE_JOB'\n{script}LAKESHORE_JOB\n", timeout=60
                )
                m = _JOB_ID.match(res.stdout.strip())
                if not res.ok or not m:
                    raise LaunchRejected(f"sbatch refused the job: {res.tail(4)}")
                job_id = m.group(1)
            out.append({"id": job_id, "state": "PENDING", "index": i, "jobName": name})
    return {"instances": out, "loginNode": sshconn.label(order.kwargs, host)}


def describe(order: LaunchOrder, ids: Sequence[str]) -> dict[str, Any]:
    """Each job's state (a finished job's with its exit status and output tail)."""
    if not ids:
        return {}
    host = sshconn.hosts(order.kwargs)[0]
    out: dict[str, Any] = {}
    with sshconn.session(order.kwargs, host) as shell:
        res = shell.run(f"squeue -h -j {','.join(ids)} -o '%i %T' 2>/dev/null; true", timeout=30)
        for line in res.stdout.splitlines():
            parts = line.split()
            if len(parts) == 2:
                out[parts[0]] = parts[1]
        for jid in ids:
            if jid in out:
                continue
            show = shell.run(f"scontrol -o show job {shlex.quote(jid)} 2>/dev/null", timeout=30)
            out[jid] = _finished(shell, show.stdout)
    return out


def _finished(shell: Any, shown: str) -> str | dict[str, Any]:
    """A job that left the queue: its state, with its exit status and output tail
    (the outcome of a direct job) when ``scontrol`` still knows it."""
    m = re.search(r"JobState=(\S+)", shown)
    if not m:
        return "gone"
    out: dict[str, Any] = {"state": m.group(1)}
    code = re.search(r"\bExitCode=(\d+):(\d+)", shown)
    if code:
        status, sig = int(code.group(1)), int(code.group(2))
        out["exitCode"] = status if not sig else 128 + sig
    path = re.search(r"\bStdOut=(\S+)", shown)
    if path:
        tail = shell.run(
            f"tail -c {TAIL_BYTES} {shlex.quote(path.group(1))} 2>/dev/null; true", timeout=30
        )
        out["outputTail"] = tail.stdout
    return out


def terminate(order: LaunchOrder, ids: Sequence[str]) -> None:
    if not ids:
        return
    host = sshconn.hosts(order.kwargs)[0]
    with sshconn.session(order.kwargs, host) as shell:
        shell.run(f"scancel {' '.join(shlex.quote(i) for i in ids)}", timeout=30)
