"""The five launchers, their dispatch defaults, and what each needs to launch.

``Provider.kind`` is a free-form string in the database; this table is the one
place that says which values registration accepts.
"""

from __future__ import annotations

from typing import Literal

from ..names import NAME_PATTERN, is_name

Launcher = Literal["EC2", "GCE", "Kube", "SSH", "SLURM"]
Dispatch = Literal["direct", "daemon"]

LAUNCHERS: tuple[str, ...] = ("EC2", "GCE", "Kube", "SSH", "SLURM")
"""Registration accepts exactly these five, spelled exactly like this."""

SERVER_LAUNCHABLE: tuple[str, ...] = ("EC2", "GCE", "Kube", "SSH", "SLURM")
"""The launch routes accept all five (``controlplane.launchers``): SLURM submits with
sbatch over SSH, SSH installs the daemon as ``connect`` does."""

DISPATCHES: tuple[str, ...] = ("direct", "daemon", "hybrid")
HYBRID_LAUNCHERS: tuple[str, ...] = ("SSH", "SLURM")
"""``hybrid``: the first work item direct, a daemon installed behind it (SSH, SLURM)."""

DEFAULT_DISPATCH: dict[str, str] = {
    "EC2": "daemon",
    "GCE": "daemon",
    "Kube": "direct",
    "SSH": "direct",
    "SLURM": "direct",
}

NAME_RULE = NAME_PATTERN

# Offline checks for `providers test`: kwargs a launcher cannot do without, and
# the type each known kwarg must have when present. ``(str, int)`` means either.
REQUIRED_KWARGS: dict[str, tuple[str, ...]] = {
    "EC2": ("region",),
    "GCE": ("project", "zone"),
    "Kube": (),
    "SSH": ("host",),
    "SLURM": ("host",),
}

KWARG_TYPES: dict[str, dict[str, tuple[type, ...]]] = {
    "EC2": {
        "region": (str,),
        "key_name": (str,),
        "security_group": (str, list),
        "subnet_id": (str,),
        "instance_type": (str,),
        "image_id": (str,),
        "ami": (str,),  # image_id as the ec2 template's decision names it
        "iam_instance_profile_arn": (str,),
        "aws_credentials": (dict,),
    },
    "GCE": {
        "project": (str,),
        "zone": (str,),
        "machine_type": (str,),
        "network": (str,),
        "service_account": (str, dict),
        "credentials": (dict, str),
    },
    "Kube": {
        "context": (str,),
        "namespace": (str,),
        "kubeconfig": (str, dict),
        "node_selector": (dict,),
        "tolerations": (list,),
    },
    "SSH": {
        "host": (str,),
        "hosts": (list,),
        "instances_per_host": (int,),
        "workdir": (str,),
        "user": (str,),
        "port": (int,),
        "private_key": (str, dict),
        "host_key": (str, dict),
        "password": (str, dict),
    },
    "SLURM": {
        "host": (str,),
        "user": (str,),
        "port": (int,),
        "partition": (str,),
        "account": (str,),
        "private_key": (str, dict),
        "host_key": (str, dict),
    },
}


def canonical_launcher(value: str) -> str | None:
    """The launcher spelled exactly as registered, or None. Case must match."""
    return value if value in LAUNCHERS else None


def default_dispatch(launcher: str) -> str:
    return DEFAULT_DISPATCH.get(launcher, "direct")


def valid_name(name: str) -> bool:
    return is_name(name)
