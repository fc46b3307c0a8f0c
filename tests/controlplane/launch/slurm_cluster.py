"""A real single-node SLURM cluster for tests: munged, slurmctld and slurmd from
Debian's packages (``scripts/test`` installs them as root when missing), each with its
own config, key, socket, state and free ports under a temp folder, and a real sshd as
the login node whose sessions see that config (``SLURM_CONF``). Needs root."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sshd import SSHServer, free_port, skip_reason, start_sshd

BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "scontrol")


def slurm_skip_reason() -> str | None:
    missing = [
        b for b in BINARIES if shutil.which(b) is None and not Path(f"/usr/sbin/{b}").exists()
    ]
    if missing:
        return (
            f"needs SLURM and munge ({', '.join(missing)} missing): "
            "apt-get install -y slurmctld slurmd slurm-client munge (scripts/test does, as root)"
        )
    if os.geteuid() != 0:
        return "needs root to run a test SLURM cluster"
    return skip_reason()


def _bin(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


@dataclass
class SlurmCluster:
    dir: Path
    conf: Path
    login: SSHServer
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    munge_pid: Path | None = None

    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *argv: str) -> str:
        return subprocess.run(
            list(argv), env=self.env(), capture_output=True, text=True, check=False, timeout=30
        ).stdout

    def add_provider(self, api: Any, ns_path: str, name: str, dispatch: str) -> None:
        """Register this cluster's login host as the SLURM provider ``name`` of the
        namespace at ``ns_path`` (its SSH key a secret, ``hpc-key``), through ``api``
        (a control-plane client)."""
        login = self.login
        secret = {"name": "hpc-key", "kind": "ssh_key", "value": login.client_key.read_text()}
        api.request("POST", ns_path + "/secrets", secret)
        kwargs = {
            "host": "127.0.0.1",
            "user": "root",
            "port": login.port,
            "partition": "debug",
            "private_key": {"$secret": "hpc-key"},
            "host_key": login.host_key,
        }
        body = {"name": name, "launcher": "SLURM", "kwargs": kwargs, "dispatch": dispatch}
        api.request("POST", ns_path + "/providers", body)

    def stop(self) -> None:
        self.login.stop()
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        if self.munge_pid is not None and self.munge_pid.exists():
            with contextlib.suppress(OSError, ValueError):
                os.kill(int(self.munge_pid.read_text().strip()), 15)


def start_cluster(base: Path) -> SlurmCluster:
    base.mkdir(parents=True, exist_ok=True)
    os.chmod(base, 0o755)
    munge = base / "munge"
    munge.mkdir(mode=0o700)
    key = munge / "munge.key"
    key.write_bytes(secrets.token_bytes(1024))
    os.chmod(key, 0o600)
    sock = munge / "munge.socket"
    pidfile = munge / "munged.pid"
    subprocess.run(
        [
            _bin("munged"),
            "--force",
            f"--socket={sock}",
            f"--key-file={key}",
            f"--log-file={munge / 'munged.log'}",
            f"--pid-file={pidfile}",
            f"--seed-file={munge / 'munged.seed'}",
        ],
        check=True,
        timeout=30,
    )
    name = f"lk{secrets.token_hex(3)}"
    conf = base / "slurm.conf"
    cluster = SlurmCluster(dir=base, conf=conf, login=None, munge_pid=pidfile)  # type: ignore[arg-type]
    for attempt in range(3):
        why = _start_daemons(cluster, base, name, sock)
        if why is None:
            break
        if "Address already in use" not in why or attempt == 2:
            cluster.login = None  # type: ignore[assignment]
            raise RuntimeError(f"the test SLURM cluster did not come up: {why}")
        # a free port another process took meanwhile (a shared machine): new ports
    cluster.login = start_sshd(base / "login", env={"SLURM_CONF": str(conf)})
    return cluster


def _start_daemons(cluster: SlurmCluster, base: Path, name: str, sock: Path) -> str | None:
    """Write the config with free ports, start slurmctld and slurmd and wait for the
    node; None when it is up, else the controller's log (the daemons killed)."""
    conf = cluster.conf
    state, spool = base / "state", base / "spool"
    for folder in (state, spool):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
    (base / "slurmctld.log").unlink(missing_ok=True)  # this try's alone
    conf.write_text(
        "\n".join(
            [
                f"ClusterName={name}",
                f"SlurmctldHost={socket.gethostname().split('.')[0]}(127.0.0.1)",
                f"SlurmctldPort={free_port()}",
                f"SlurmdPort={free_port()}",
                "AuthType=auth/munge",
                "CredType=cred/munge",
                f"AuthInfo=socket={sock}",
                "SlurmUser=root",
                "SlurmdUser=root",
                f"StateSaveLocation={state}",
                f"SlurmdSpoolDir={spool}",
                f"SlurmctldPidFile={base / 'slurmctld.pid'}",
                f"SlurmdPidFile={base / 'slurmd.pid'}",
                f"SlurmctldLogFile={base / 'slurmctld.log'}",
                f"SlurmdLogFile={base / 'slurmd.log'}",
                "ProctrackType=proctrack/linuxproc",
                "TaskPlugin=task/none",
                "SchedulerType=sched/builtin",
                "SelectType=select/cons_tres",
                "SelectTypeParameters=CR_Core",
                "ReturnToService=2",
                "MpiDefault=none",
                "JobAcctGatherType=jobacct_gather/none",
                "AccountingStorageType=accounting_storage/none",
                "MinJobAge=600",
                f"NodeName={name}n NodeAddr=127.0.0.1 CPUs={os.cpu_count() or 1} State=UNKNOWN",
                "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
                "",
            ]
        )
    )
    env = {**os.environ, "SLURM_CONF": str(conf)}
    for argv in (
        [_bin("slurmctld"), "-D", "-f", str(conf)],
        [_bin("slurmd"), "-D", "-N", f"{name}n", "-f", str(conf)],
    ):
        log = (base / f"{Path(argv[0]).name}.out").open("wb")
        cluster.procs.append(
            subprocess.Popen(
                argv,
                cwd=base,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        )
        log.close()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if any(p.poll() is not None for p in cluster.procs):
            break  # a daemon ended (a port taken meanwhile): said in the log
        out = subprocess.run(
            ["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True, check=False
        ).stdout.strip()
        if out in ("idle", "mixed", "allocated"):
            return None
        time.sleep(0.5)
    for p in cluster.procs:
        p.kill()
        p.wait()
    cluster.procs.clear()
    return (base / "slurmctld.log").read_text(errors="replace")[-1500:]
