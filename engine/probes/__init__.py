"""Account probes: best-effort hints that fill ``Blocking.observed``.

``run_probes(names, paths)`` returns ``({probe: values}, degraded)``. A probe whose
credentials are absent yields nothing and adds ``"no-probe"`` to degraded; so does
a probe that errs or runs out of time. A probe never fails a command. Credentials
are detected cheaply (environment, profile files) before any cloud SDK is
imported, and the SDK is imported only inside the probe that needs it.

Probes the templates name:

===================== ==========================================================
``aws-regions-in-use`` regions with running or stopped instances
``aws-subnets``        subnet IDs in the provider's region
``aws-vpcs``           ``vpc-… (CIDR)`` of the VPCs in the provider's region
``aws-gpu-amis``       the newest GPU-ready (Deep Learning) AMIs in the provider's region
``gcp-projects``       projects named by the local Google Cloud configuration
``gcp-gpu-zones``      zones offering an NVIDIA GPU in the provider's project (``gcloud``)
``ssh-config-hosts``   ``Host`` names in ``~/.ssh/config``
===================== ==========================================================

No credentials for a probe adds ``"no-credentials"`` (and ``"no-probe"``: nothing was
asked); a probe that cannot run for another reason (no SDK or CLI, an unknown name)
or fails adds ``"no-probe"`` alone.
A probe that ran and found nothing returns ``[]`` — present and empty means
"asked, and the account has none", unlike an absent ``observed``. A regional
probe (subnets, VPCs, AMIs) is not asked until the provider's region is decided:
its ``observed`` stays absent meanwhile, without ``no-probe``.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from ..world.paths import ProviderPaths

DEADLINE_SECONDS = 12.0
NO_PROBE = "no-probe"
NO_CREDENTIALS = "no-credentials"


def run_probes(names: set[str], paths: ProviderPaths) -> tuple[dict[str, list[str]], list[str]]:
    """Run the probes in ``names`` for the provider in ``paths``; never raises."""
    if not names:
        return {}, []
    observed: dict[str, list[str]] = {}
    failed = no_credentials = False
    jobs: dict[str, Callable[[], list[str] | None]] = {}
    for name in sorted(names):
        job = _job(name, paths)
        if job is None or isinstance(job, str):
            failed = True
            no_credentials = no_credentials or job == NO_CREDENTIALS
        else:
            jobs[name] = job
    if jobs:
        pool = ThreadPoolExecutor(max_workers=len(jobs))
        try:
            futures = {pool.submit(job): name for name, job in jobs.items()}
            done, pending = wait(futures, timeout=DEADLINE_SECONDS + 1.0)
            failed = failed or bool(pending)
            for fut in done:
                try:
                    values = fut.result()
                    if values is not None:  # None: not applicable yet (no region decided)
                        observed[futures[fut]] = list(values)
                except Exception:
                    failed = True  # a probe is a hint; its failure is reported as degraded
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
    degraded = [NO_CREDENTIALS] if no_credentials else []
    return observed, [*degraded, NO_PROBE] if failed else []


Job = Callable[[], list[str] | None]


def _job(name: str, paths: ProviderPaths) -> Job | str | None:
    """A callable running probe ``name``; ``NO_CREDENTIALS`` when the credentials it
    needs are absent; None when it cannot run here for another reason."""
    if name.startswith("aws-"):
        return _aws_job(name, paths)
    if name == "gcp-projects":
        from .credentials import gcp_project_hints

        hints = gcp_project_hints()
        return NO_CREDENTIALS if hints is None else (lambda: hints)
    if name == "gcp-gpu-zones":
        from .gcp import gpu_zones_job

        return gpu_zones_job(paths, DEADLINE_SECONDS)
    if name == "ssh-config-hosts":
        return _ssh_config_hosts
    return None


def _aws_job(name: str, paths: ProviderPaths) -> Job | str | None:
    from .credentials import aws_credentials_available

    if not aws_credentials_available():
        return NO_CREDENTIALS
    try:
        import boto3  # noqa: F401  (present? the probe needs it)
    except ImportError:
        return None
    from ..settings import endpoints
    from . import aws

    probe = aws.PROBES.get(name)
    if probe is None:
        return None
    try:
        settings = endpoints.resolve(paths.dir)
    except Exception:
        return None  # bad settings are reported by the verb that uses them
    ctx = aws.AwsContext(
        settings=settings,
        region=decided_value(paths, "region"),
        deadline=time.monotonic() + DEADLINE_SECONDS,
    )
    return lambda: probe(ctx)


_REGION = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-[0-9]+$")


def decided_value(paths: ProviderPaths, var: str) -> str | None:
    """A string decision already made for this provider (``terraform.tfvars``, else a
    pulumi stack file), used to scope regional probes. None when unset or invalid."""
    value = _tfvars_value(paths.terraform / "terraform.tfvars", var)
    if value is None:
        value = _pulumi_value(paths.pulumi, var)
    if var == "region" and value is not None and not _REGION.match(value):
        return None
    return value


def _tfvars_value(path: Path, var: str) -> str | None:
    if not path.is_file():
        return None
    try:
        from ..settings import hcl
        from ..settings.readers import read_text

        data: Any = hcl.loads(read_text(path))
    except Exception:
        return None
    value = data.get(var) if isinstance(data, dict) else None
    if not isinstance(value, str):
        return None
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = value[1:-1]
    return value.strip() or None


def _pulumi_value(folder: Path, var: str) -> str | None:
    try:
        files = sorted(folder.glob("Pulumi.*.yaml"))
    except OSError:
        return None
    if not files:
        return None
    import yaml

    from ..settings.readers import read_text
    from ..settings.yamlload import safe_load

    for f in files:
        try:
            data = safe_load(read_text(f)) or {}
        except (OSError, ValueError, yaml.YAMLError):
            continue
        config = data.get("config") if isinstance(data, dict) else None
        if not isinstance(config, dict):
            continue
        for key, value in config.items():
            if (key == var or str(key).endswith(f":{var}")) and isinstance(value, str) and value:
                return value
    return None


def _ssh_config_hosts() -> list[str]:
    path = Path(os.environ.get("HOME") or Path.home()) / ".ssh" / "config"
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    hosts: list[str] = []
    for line in lines:
        parts = line.strip().split(None, 1)
        if len(parts) == 2 and parts[0].lower() == "host":
            for h in parts[1].split():
                if not any(c in h for c in "*?!"):
                    hosts.append(h)
    return list(dict.fromkeys(hosts))


__all__ = ["decided_value", "run_probes"]
