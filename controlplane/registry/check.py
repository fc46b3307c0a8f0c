"""``providers test``: what can be known about a provider without calling anything.

Pure over the provider row and a secret lookup; the server runs it with a lookup
that really decrypts (so a wrong server key or a malformed keypair shows up), and
reports only whether each step passed — never a value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .kwargs import is_secret_marker, secret_refs
from .launchers import KWARG_TYPES, REQUIRED_KWARGS, SERVER_LAUNCHABLE

NOT_CHECKED: dict[str, str] = {
    "EC2": "did not call AWS: no network check was made (credentials, region, key pair, "
    "security group and instance profile are unverified against the account)",
    "GCE": "did not call Google Cloud: no network check was made (project, zone and "
    "credentials are unverified against the account)",
    "Kube": "did not contact the apiserver: no network check was made (context, "
    "namespace and RBAC are unverified)",
    "SSH": "did not open an SSH session: host reachability and authentication are unverified",
    "SLURM": "did not contact the login node: host reachability, sbatch and the "
    "partition are unverified",
}


@dataclass
class Check:
    name: str
    ok: bool
    detail: str

    def to_wire(self) -> dict[str, Any]:
        return {"check": self.name, "ok": self.ok, "detail": self.detail}


@dataclass
class CheckReport:
    provider: str
    launcher: str
    checks: list[Check] = field(default_factory=list)
    not_checked: list[str] = field(default_factory=list)
    stub: str | None = None

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def to_wire(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "launcher": self.launcher,
            "ok": self.ok,
            "checks": [c.to_wire() for c in self.checks],
            "notChecked": self.not_checked,
            "stub": self.stub,
        }


SecretProbe = Callable[[str], str | None]
"""secret name -> None when it resolves, else a sentence saying why not (no value)."""


def check_provider(
    name: str, launcher: str, kwargs: Mapping[str, Any], probe: SecretProbe
) -> CheckReport:
    report = CheckReport(provider=name, launcher=launcher)
    for key in REQUIRED_KWARGS.get(launcher, ()):
        present = key in kwargs and kwargs[key] not in (None, "")
        report.checks.append(
            Check(
                f"required:{key}",
                present,
                f"{key} is set"
                if present
                else f"{launcher} needs kwarg {key!r} (set it with --kwarg {key}=<value>)",
            )
        )
    for key, types in KWARG_TYPES.get(launcher, {}).items():
        if key not in kwargs or is_secret_marker(kwargs[key]):
            continue
        value = kwargs[key]
        good = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
        report.checks.append(
            Check(
                f"type:{key}",
                good,
                f"{key} is {type(value).__name__}"
                if good
                else f"{key} should be {' or '.join(t.__name__ for t in types)}, "
                f"got {type(value).__name__}",
            )
        )
    port = kwargs.get("port")
    if "port" in KWARG_TYPES.get(launcher, {}) and isinstance(port, int) and not 0 < port < 65536:
        report.checks.append(Check("range:port", False, "port must be 1-65535"))
    for path, secret in secret_refs(kwargs):
        why = probe(secret)
        report.checks.append(
            Check(
                f"secret:{path}",
                why is None,
                f"secret {secret!r} exists and decrypts" if why is None else why,
            )
        )
    if launcher not in SERVER_LAUNCHABLE:
        report.not_checked.append(
            f"{launcher} has no server-side launch route; the launch routes accept only "
            + ", ".join(SERVER_LAUNCHABLE)
        )
    report.not_checked.append(NOT_CHECKED.get(launcher, "no network check was made"))
    return report
