"""A lifecycle provider as a row in the control plane's registry.

When a provider is applied or connected its row is registered (or updated) in the
namespace: the launcher from the vendor, kwargs from the applied outputs (or
``adopt.json``), never a credential, and the provider's identity, which its
daemons also carry. A name is one provider: a row registered by hand is adopted by
the lifecycle provider of that name; a row owned by another identity (another
``.dream`` root, another machine) is a conflict, reported before anything acts.

Without a control plane nothing here fails: the caller already says
``degraded: ["no-lakeshore"]``.
"""

from __future__ import annotations

from ..contract import commands
from ..contract.errors import DreamlakeError
from ..contract.result import Run
from . import lakeshore

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from typing import Any

    from .derive import Observation

LAUNCHERS: dict[str, str] = {
    "ec2": "EC2",
    "gce": "GCE",
    "kube": "Kube",
    "ssh": "SSH",
    "local": "SSH",
}
"""Vendor → the registry's launcher (a vendor not listed registers as SSH)."""

RENAMED = {"worker_host": "host", "worker_user": "user", "worker_hosts": "hosts"}
SKIPPED = ("daemon_args", "workdir")
SECRET_WORDS = (
    "secret",
    "password",
    "passwd",
    "token",
    "credential",
    "private",
    "kubeconfig",
    "ca_data",
    "certificate",
    "access_key",
)
ADOPT_KEYS = ("host", "user", "port", "queues", "worker_name")
OFFER_VARS: dict[str, tuple[str, ...]] = {
    "EC2": ("instance_type",),
    "GCE": ("machine_type", "zone"),
}
"""Launcher → the template variables that choose what the provider launches: the row
carries them, so ``lakeshore capacity`` lists what it really launches."""
VAR_FILE = "terraform/terraform.tfvars"
TIMEOUT = 3.0


class IdentityConflict(DreamlakeError):
    """The name is registered in the namespace by another provider identity."""

    kind = "identity_conflict"


def launcher_for(vendor: str) -> str:
    return LAUNCHERS.get(vendor, "SSH")


def _plain(v: Any) -> Any:
    return v["value"] if isinstance(v, dict) and "value" in v else v


def _secretish(key: str) -> bool:
    k = key.lower()
    return any(w in k for w in SECRET_WORDS)


def row_kwargs(obs: Observation) -> dict[str, Any]:
    """The row's kwargs from what the world says now: the non-sensitive outputs of
    the state (host, user, region, instance ids…) or the adopt decisions."""
    out: dict[str, Any] = {}
    if obs.adopt:
        try:
            from ..settings.readers import read_json

            adopt = read_json(obs.dir / "adopt.json")
        except (OSError, ValueError):
            adopt = {}
        if isinstance(adopt, dict):
            out = {k: adopt[k] for k in ADOPT_KEYS if adopt.get(k) not in (None, "", [])}
    elif obs.infra is not None:
        for k, v in obs.infra.outputs.items():
            if k in SKIPPED or _secretish(k):
                continue
            out[RENAMED.get(k, k)] = _plain(v)
        out.update({k: v for k, v in offer_vars(obs).items() if k not in out})
    return out


def offer_vars(obs: Observation) -> dict[str, Any]:
    """The values of the template variables that choose what the provider launches
    (:data:`OFFER_VARS`), read from the file its decision names (the variables file
    when no decision does); a value not set, not a string or unreadable is left out."""
    record = getattr(obs, "record", None)
    if record is None:
        return {}
    wanted = OFFER_VARS.get(launcher_for(record.vendor), ())
    if not wanted:
        return {}
    from ..contract.errors import DreamlakeError
    from ..scan.tfvars import read_var_file

    files: dict[str, list[str]] = {}
    for var in wanted:
        d = (
            next((d for d in obs.template.decisions if d.var == var), None)
            if obs.template
            else None
        )
        files.setdefault(d.file if d is not None else VAR_FILE, []).append(var)
    out: dict[str, Any] = {}
    for rel, names in files.items():
        try:
            values = read_var_file(obs.dir / rel, obs.name).values
        except DreamlakeError:
            continue
        out.update({k: values[k] for k in names if isinstance(values.get(k), str) and values[k]})
    return out


def _client(cp: lakeshore.ControlPlane) -> Any:
    from dreamlake.controlplane.client import Client

    return Client.from_control_plane(cp, timeout=TIMEOUT)


def _get(client: Any, name: str) -> dict[str, Any] | None:
    """The active row named ``name``; None when there is none."""
    from dreamlake.controlplane.client import ApiFailure

    try:
        row = client.provider_row(name)
    except ApiFailure as exc:
        if exc.status == 404:
            return None
        raise
    if not isinstance(row, dict) or row.get("deletedAt"):
        return None
    return row


def fetch_row(cp: lakeshore.ControlPlane, name: str) -> dict[str, Any] | None:
    """The active row named ``name``; None when there is none or nothing can be asked."""
    if not cp.token:
        return None
    from dreamlake.controlplane.client import ControlPlaneError  # with a request to make

    try:
        return _get(_client(cp), name)
    except ControlPlaneError:
        return None


def conflict(
    name: str, theirs: str, dream_dir: str | None, vendor: str = "local"
) -> IdentityConflict:
    return IdentityConflict(
        f"the name {name!r} is already registered in the control plane by another provider "
        f"(identity {theirs}, from another .dream root or machine); one name is one provider. "
        "Pick another name, or remove that provider first where it lives "
        f"(dreamlake provider delete -n {name} there, or lakeshore providers remove {name}).",
        next_action=Run(command=commands.create(f"{name}-2", vendor, dream_dir)),
    )


def owner_elsewhere(cp: lakeshore.ControlPlane, name: str) -> str | None:
    """The identity of the control plane's row named ``name``, for a name this root
    has no provider of (so any identity is another root's); None when there is no
    such row or the control plane cannot be asked."""
    if not cp.token:
        return None
    from dreamlake.controlplane.client import ControlPlaneError

    try:
        row = _get(_client(cp), name)
    except ControlPlaneError:
        return None
    return str(row["identity"]) if row and row.get("identity") else None


def check(
    cp: lakeshore.ControlPlane,
    name: str,
    identity: str,
    dream_dir: str | None,
    vendor: str = "local",
) -> None:
    """Raise :class:`IdentityConflict` when another identity owns ``name``; say
    nothing when the control plane cannot be asked."""
    if not cp.token:
        return
    # http.client (and ssl, email) only with a request to make: apply's path without
    # a token never pays for them.
    from dreamlake.controlplane.client import ControlPlaneError

    try:
        row = _get(_client(cp), name)
    except ControlPlaneError:
        return
    if row and row.get("identity") and row["identity"] != identity:
        raise conflict(name, str(row["identity"]), dream_dir, vendor)


def register(obs: Observation, *, create: bool = True) -> list[str]:
    """Register or update the row of an applied or connected provider (``create``
    False: only update an existing one). Returns prose notes; never raises for the
    control plane (a conflict found only now, after the verb acted, is a note: the
    check before acting is what refuses)."""
    return register_outcome(obs, create=create)[0]


def register_outcome(obs: Observation, *, create: bool = True) -> tuple[list[str], Any]:
    """:func:`register`, and the control plane's refusal (a client ``ApiFailure``)
    when it answered but did not register the row: a verb says so in its result."""
    if obs.record is None:
        return [], None
    # the control plane the observation was made with (the same root's)
    cp = obs.cp or lakeshore.resolve_control_plane(obs.dir.parent.parent.parent)
    if not cp.token:
        return [], None
    return _register(obs, cp, create)


def _register(obs: Observation, cp: lakeshore.ControlPlane, create: bool) -> tuple[list[str], Any]:
    from dreamlake.controlplane.client import ApiFailure, ControlPlaneError

    assert obs.record is not None
    ident = obs.record.identity(obs.dir)
    name = obs.name
    launcher = launcher_for(obs.record.vendor)
    kwargs = row_kwargs(obs)
    client = _client(cp)
    try:
        row = _get(client, name)
        if row is None and not create:
            return [], None
        if row is None:
            client.create_provider_row(
                {"name": name, "launcher": launcher, "kwargs": kwargs, "identity": ident}
            )
            return [
                f"registered provider row '{name}' ({launcher}) in namespace {cp.namespace}"
            ], None
        if row.get("identity") and row["identity"] != ident:
            return [f"⚠ {conflict(name, str(row['identity']), obs.dream_dir).message}"], None
        if row.get("launcher") != launcher:
            return [
                f"⚠ the control plane's row '{name}' is launcher {row.get('launcher')}, this "
                f"provider is {launcher}: the row was left alone (launchers are immutable: "
                f"lakeshore providers remove {name}, then re-run)"
            ], None
        patch: dict[str, Any] = dict(kwargs)
        for k in (row.get("kwargs") or {}).keys() - kwargs.keys():
            if k in RENAMED.values() or k in ("instance_ids", "instance_id", "region", "zone"):
                patch[k] = None  # a fact of the world that is gone now
        client.update_provider_row(name, {"kwargsPatch": patch, "identity": ident})
        return [f"updated provider row '{name}' in namespace {cp.namespace}"], None
    except ApiFailure as exc:
        return [f"⚠ the provider row '{name}' was not registered: {exc}"], exc
    except ControlPlaneError:
        return [], None


def remove(cp: lakeshore.ControlPlane, name: str, identity: str) -> str | None:
    """Soft-delete the row if it is this identity's (or nobody's). Returns a note,
    None when there was nothing to do or nothing could be asked."""
    from dreamlake.controlplane.client import ApiFailure, ControlPlaneError

    if not cp.token:
        return None
    client = _client(cp)
    try:
        row = _get(client, name)
        if row is None:
            return None
        if row.get("identity") and row["identity"] != identity:
            return (
                f"the control plane's row '{name}' belongs to another provider "
                f"(identity {row['identity']}): left alone"
            )
        client.delete_provider_row(name)
        return f"removed provider row '{name}' from namespace {cp.namespace} (soft delete)"
    except ApiFailure as exc:
        return f"⚠ the provider row '{name}' was not removed: {exc}"
    except ControlPlaneError:
        return None


__all__ = [
    "LAUNCHERS",
    "IdentityConflict",
    "check",
    "fetch_row",
    "launcher_for",
    "register",
    "register_outcome",
    "remove",
]
