"""Where a provider's daemon runs, as ``connect`` left it: ``daemon.json`` beside
``provider.json``, one small file written atomically::

    {"host": "10.0.0.7", "user": "ubuntu", "port": 22, "key": "prv-…", "from": "--host",
     "supervisor": "tmux"}

(``{"local": true, …}`` for this machine; ``identityFile`` when adopt.json names a
key). It records the world as ``connect`` left it — which host holds the daemon,
under which key — never a phase: the status is still derived on every run.

Every verb after ``connect`` (status, suspend, resume, destroy) reaches that host
and no other. Without a record (no connect yet, or one by an older dreamlake) a
verb reaches only what a person named: adopt.json's host, or this machine for the
``local`` vendor. A host derived from the infrastructure's outputs
(``worker_host``) is contacted by ``connect`` alone, which names it first (its
progress line, and ``host`` in its result) and records it; a later verb never
guesses it (on a test double it is a private address nobody can reach; on a real
cloud it may be one the user never meant to be contacted).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..settings.records import record

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if not TYPE_CHECKING:  # the alias below at run time, without typing (contract/forms.py)
    from ..contract.forms import Literal
else:
    from typing import Literal
if TYPE_CHECKING:
    from typing import Any

    from ..remote.ssh import SSHTarget
    from ..world.derive import Observation
    from ..world.paths import ProviderPaths

RECORD = "daemon.json"
Source = Literal["record", "adopt", "local", "outputs"]


@record()
class DaemonHost:
    """A daemon's host: this machine (``local``) or an SSH ``target``; ``source``
    says who named it (the record connect wrote, adopt.json, the vendor, outputs)."""

    local: bool
    target: SSHTarget | None
    source: Source
    key: str | None = None  # the key connect installed under (record only)
    supervisor: str | None = None  # what connect started it under (record only)

    @property
    def label(self) -> str:
        if self.local or self.target is None:
            return "localhost"
        return self.target.label


def record_path(provider_dir: Path) -> Path:
    return provider_dir / RECORD


def read(provider_dir: Path) -> DaemonHost | None:
    """The recorded host, None when there is no (readable) record."""
    try:
        data: Any = json.loads(record_path(provider_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    key = data.get("key") if isinstance(data.get("key"), str) else None
    sup = data.get("supervisor") if isinstance(data.get("supervisor"), str) else None
    if data.get("local") is True:
        return DaemonHost(True, None, "record", key, sup)
    host = data.get("host")
    if not isinstance(host, str) or not host:
        return None
    port: int = data["port"] if isinstance(data.get("port"), int) else 22
    user = data.get("user") if isinstance(data.get("user"), str) else None
    ident = data.get("identityFile") if isinstance(data.get("identityFile"), str) else None
    from ..remote.ssh import SSHTarget  # not for this machine: status stays light

    return DaemonHost(
        False, SSHTarget(host, user or None, port, identity_file=ident), "record", key, sup
    )


def write(
    provider_dir: Path,
    local: bool,
    target: SSHTarget | None,
    key: str,
    source: str,
    supervisor: str | None = None,
) -> Path | None:
    """Record where ``connect`` put the daemon; returns the path when it changed.
    ``source`` says who named the host (``--host``, ``adopt``, ``local``,
    ``outputs``); ``record`` (a restart on the recorded host) keeps what it said.
    ``supervisor``: what connect started the daemon under, once it did (``status``
    reports it while a live claim proves the daemon runs, without asking the host)."""
    from ..settings.fsutil import atomic_write

    path = record_path(provider_dir)
    if source == "record":
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
            source = str(old.get("from") or "record") if isinstance(old, dict) else "record"
        except (OSError, ValueError):
            pass

    data: dict[str, Any]
    if local or target is None:
        data = {"local": True}
    else:
        data = {"host": target.host, "user": target.user, "port": target.port}
        if target.identity_file:
            data["identityFile"] = target.identity_file
    data.update(key=key, **{"from": source})
    if supervisor:
        data["supervisor"] = supervisor
    text = json.dumps(data, indent=2) + "\n"
    try:
        if path.read_text(encoding="utf-8") == text:
            return None
    except OSError:
        pass
    atomic_write(path, text)
    return path


def same_host(found: DaemonHost, local: bool, target: SSHTarget | None) -> bool:
    """Whether ``found`` is the machine ``local``/``target`` names (host, user, port)."""
    if found.local or local or found.target is None or target is None:
        return (found.local or found.target is None) == (local or target is None)
    a, b = found.target, target
    return (a.host, a.user, a.port) == (b.host, b.user, b.port)


def clear(provider_dir: Path) -> Path | None:
    """Forget the host (its daemon is gone from there); the path when one was removed."""
    path = record_path(provider_dir)
    try:
        path.unlink()
    except FileNotFoundError:
        return None
    return path


def outputs_host(obs: Observation) -> SSHTarget | None:
    """The host the infrastructure's outputs name (``worker_host``/``worker_user``):
    what ``connect`` derives when no ``--host`` is given."""
    from ..remote.ssh import parse_host

    outs = {
        k: (v["value"] if isinstance(v, dict) and "value" in v else v)
        for k, v in (obs.infra.outputs if obs.infra else {}).items()
    }
    if not outs.get("worker_host"):
        return None
    return parse_host(str(outs["worker_host"]), user=outs.get("worker_user") or None)


def read_adopt(paths: ProviderPaths) -> dict[str, Any]:
    """adopt.json's mapping; empty when it is missing or unreadable."""
    try:
        from ..settings.readers import read_json

        data = read_json(paths.adopt_json)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def host_target(obs: Observation, host: str | None = None) -> Any:
    """The SSH target of a daemon-level provider, None for this machine (``local``)."""
    from ..remote.ssh import SSHTarget, parse_host
    from ..world.paths import ProviderPaths

    if not obs.adopt:
        if host:
            return parse_host(host)
        return None
    adopt = read_adopt(ProviderPaths(obs.dir))
    spec = host or adopt.get("host")
    if not spec:
        return None
    port = adopt.get("port") if isinstance(adopt.get("port"), int) else None
    target = parse_host(str(spec), user=adopt.get("user") or None, port=port)
    ident = adopt.get("identity_file")
    if ident:
        ident = os.path.expanduser(str(ident))
        if not os.path.isabs(ident):
            ident = str((obs.dir / ident).resolve())
        target = SSHTarget(target.host, target.user, target.port, identity_file=ident)
    return target


def where(obs: Observation) -> DaemonHost | None:
    """The host every verb after ``connect`` reaches: the record, else adopt.json's
    host (adopted providers), else this machine (the ``local`` vendor); None when
    no one named a host. Never the outputs (see the module)."""
    if obs.record is None:
        return None
    found = read(obs.dir)
    if found is not None:
        return found
    if obs.adopt:
        from ..contract.errors import DreamlakeError

        try:
            t = host_target(obs)
        except DreamlakeError:
            return None
        return None if t is None else DaemonHost(False, t, "adopt")
    if obs.record.vendor == "local":
        return DaemonHost(True, None, "local")
    return None


def unrecorded_note(obs: Observation, doing: str) -> str | None:
    """Why a verb did not reach a daemon the outputs suggest (no record): a note
    naming the host, so a person can connect it (which records it) first."""
    try:
        t = outputs_host(obs)
    except Exception:
        t = None
    if t is None:
        return None
    return (
        f"⚠ connect recorded no host for this daemon, so it was not {doing}: the "
        f"worker_host output names {t.label}, which is contacted only by connect "
        f"(re-run connect, with --host if that is not the machine)"
    )


__all__ = [
    "RECORD",
    "DaemonHost",
    "clear",
    "outputs_host",
    "read",
    "record_path",
    "same_host",
    "unrecorded_note",
    "where",
    "write",
]
