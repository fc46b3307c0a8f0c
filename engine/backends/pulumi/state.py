"""Read a Pulumi file ("DIY") backend directly: no CLI call, no ``pulumi`` import.

``status`` must stay fast, so this module reads the backend's files itself:

* the layout: ``.pulumi/meta.yaml`` ``version: 1`` = project-scoped
  (``stacks/<project>/<stack>.json``, locks in ``locks/organization/<project>/<stack>/``),
  absent or ``version: 0`` = legacy (``stacks/<stack>.json``, ``locks/<stack>/``);
* the checkpoint: ``<stack>.json``, ``.json.gz`` or ``.json.zst`` — the most recently
  modified one, its compression told by magic bytes (zstd only when a zstd module is
  importable: ``zstandard``, or ``compression.zstd`` on Python 3.14+);
* the resource count: resources of the latest deployment **excluding** the root
  ``pulumi:pulumi:Stack`` resource, provider resources (``pulumi:providers:*``),
  component resources (``custom: false``, logical groupings that create nothing)
  and old copies awaiting deletion (``delete: true``). "present" means the stack has
  been deployed and not destroyed: the latest deployment holds any resource, the
  root stack included (a program with outputs only, like ``local``, has zero
  counted resources and is still present);
* the outputs: the root stack resource's ``outputs``; secret values are left out;
* the machines' power as last applied (:func:`power_state`): each
  ``aws:ec2transitgateway/instanceState:InstanceState``'s ``state`` and each
  ``gcp:compute/instance:Instance``'s ``desiredStatus``, as the terraform path reads
  ``aws_ec2_instance_state`` / ``desired_status`` from its state;
* lock files ``<uuid>.json`` = ``{"pid", "username", "hostname", "timestamp"}``: held
  when the pid is alive on this host, stale when this host has no such process;
  a lock taken on another host cannot be checked from here and counts as held;
* ``pending_operations``: operations an interrupted update started and never
  confirmed → a stale lock saying what clears them.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ...settings.readers import MAX_STATE, loads_json, read_bytes, read_json, read_text
from ...settings.yamlload import safe_load

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
SECRET_SIG = "4dabf18193072939515e22adb298388d"
SECRET_VALUE = "1b47061264138c4ac30d75fd1eb44270"
ROOT_STACK = "pulumi:pulumi:Stack"
PROVIDER_PREFIX = "pulumi:providers:"
VARIANTS = (".json", ".json.gz", ".json.zst")


class StateUnreadable(Exception):
    """The checkpoint exists but cannot be read here (e.g. zstd without a zstd module)."""


@dataclass(frozen=True)
class Checkpoint:
    path: Path
    version: int
    stack: str
    latest: dict[str, Any] | None

    @property
    def resources(self) -> list[dict[str, Any]]:
        res = (self.latest or {}).get("resources") or []
        return [r for r in res if isinstance(r, dict)]

    @property
    def pending_operations(self) -> list[dict[str, Any]]:
        ops = (self.latest or {}).get("pending_operations") or []
        return [o for o in ops if isinstance(o, dict)]

    @property
    def manifest_time(self) -> str | None:
        t = ((self.latest or {}).get("manifest") or {}).get("time")
        return t if isinstance(t, str) and not t.startswith("0001-") else None


@dataclass(frozen=True)
class LockFile:
    path: Path
    pid: int | None
    username: str
    hostname: str
    timestamp: str | None
    held: bool
    detail: str


@dataclass(frozen=True)
class BackendFiles:
    """What one stack looks like in a file backend rooted at ``root``."""

    root: Path
    project: str
    stack: str
    layout: str = "project"  # "project" or "legacy"
    notes: list[str] = field(default_factory=list)

    @classmethod
    def open(cls, root: Path, project: str, stack: str) -> BackendFiles:
        notes: list[str] = []
        meta = root / ".pulumi" / "meta.yaml"
        version = 0
        if meta.is_file():
            try:
                data = safe_load(read_text(meta)) or {}
                version = int(data.get("version", 0)) if isinstance(data, dict) else 0
            except (OSError, ValueError, TypeError, yaml.YAMLError):
                notes.append(f"{meta} is unreadable; reading the legacy layout")
        if version not in (0, 1):
            notes.append(f"{meta} names layout version {version}, which this reader does not know")
        return cls(root, project, stack, "project" if version == 1 else "legacy", notes)

    @property
    def pulumi_dir(self) -> Path:
        return self.root / ".pulumi"

    @property
    def stack_base(self) -> Path:
        if self.layout == "project":
            return self.pulumi_dir / "stacks" / self.project / self.stack
        return self.pulumi_dir / "stacks" / self.stack

    @property
    def lock_dir(self) -> Path:
        if self.layout == "project":
            return self.pulumi_dir / "locks" / "organization" / self.project / self.stack
        return self.pulumi_dir / "locks" / self.stack

    def stack_file(self) -> Path | None:
        """The checkpoint the CLI would read: the most recently modified variant."""
        found = []
        for ext in VARIANTS:
            p = self.stack_base.with_name(self.stack_base.name + ext)
            try:
                found.append((p.stat().st_mtime_ns, p))
            except OSError:
                continue
        return max(found)[1] if found else None

    def checkpoint(self) -> Checkpoint | None:
        path = self.stack_file()
        if path is None:
            return None
        return read_checkpoint(path)

    def locks(self, *, hostname: str | None = None) -> list[LockFile]:
        try:
            entries = sorted(self.lock_dir.iterdir())
        except OSError:
            return []
        host = hostname or socket.gethostname()
        return [read_lock(p, host) for p in entries if p.is_file() and p.name.endswith(".json")]

    def state_digest(self) -> str:
        """A digest of the checkpoint bytes ("none" without one): a saved plan is
        fresh only against the state it was made from."""
        path = self.stack_file()
        if path is None:
            return "none"
        try:
            return hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            return "none"


def decompress(data: bytes, path: Path) -> bytes:
    if data[:2] == GZIP_MAGIC:
        return gzip.decompress(data)
    if data[:4] == ZSTD_MAGIC:
        return _zstd(data, path)
    return data


def _zstd(data: bytes, path: Path) -> bytes:
    try:
        import zstandard  # type: ignore[import-not-found]

        out: bytes = zstandard.ZstdDecompressor().decompressobj().decompress(data)
        return out
    except ImportError:
        pass
    try:
        from compression import zstd  # type: ignore[import-not-found]

        raw: bytes = zstd.decompress(data)
        return raw
    except ImportError:
        raise StateUnreadable(
            f"{path} is zstd-compressed (PULUMI_DIY_BACKEND_ZSTD) and no zstd module is "
            "installed here; `pip install zstandard` lets status read it"
        ) from None


def read_checkpoint(path: Path) -> Checkpoint:
    try:
        raw = decompress(read_bytes(path, limit=MAX_STATE), path)
        data = loads_json(raw, path=path, max_depth=None)
    except (OSError, ValueError, EOFError) as exc:
        raise StateUnreadable(f"{path} is not a readable Pulumi checkpoint: {exc}") from exc
    if not isinstance(data, dict):
        raise StateUnreadable(f"{path} is not a Pulumi checkpoint (not a JSON object)")
    cp = data.get("checkpoint")
    if isinstance(cp, dict):
        latest = cp.get("latest")
        stack = str(cp.get("stack") or "")
    else:  # a `pulumi stack export` document
        latest = data.get("deployment")
        stack = ""
    return Checkpoint(
        path=path,
        version=int(data.get("version") or 0),
        stack=stack,
        latest=latest if isinstance(latest, dict) else None,
    )


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def read_lock(path: Path, this_host: str) -> LockFile:
    try:
        data = read_json(path)
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    pid = data.get("pid") if isinstance(data.get("pid"), int) else None
    user = str(data.get("username") or "?")
    host = str(data.get("hostname") or "")
    ts = data.get("timestamp") if isinstance(data.get("timestamp"), str) else None
    if not data:
        held, detail = False, "the lock file is unreadable; it was most likely left by a killed run"
    elif host and host != this_host:
        held = True
        detail = (
            f"taken on another host ({host}); whether pid {pid} still runs there cannot be "
            "checked from here"
        )
    elif pid is not None and pid_alive(pid):
        held, detail = True, f"pid {pid} is running on this host"
    else:
        held, detail = False, f"pid {pid} no longer runs on this host"
    return LockFile(path, pid, user, host, ts, held, detail)


def _is_secret(value: Any) -> bool:
    return isinstance(value, dict) and value.get(SECRET_SIG) == SECRET_VALUE


def _redact(value: Any) -> Any:
    if _is_secret(value):
        return "[secret]"
    if isinstance(value, list):
        return [_redact(v) for v in value]
    if isinstance(value, dict):
        return {k: _redact(v) for k, v in value.items()}
    return value


def stack_outputs(cp: Checkpoint) -> dict[str, Any]:
    """The root stack resource's outputs, secret values left out."""
    for r in cp.resources:
        if r.get("type") == ROOT_STACK and not r.get("parent"):
            outs = r.get("outputs") or {}
            return {k: _redact(v) for k, v in outs.items() if not _is_secret(v)}
    return {}


# Resources whose applied state says whether the machines run: type → the attribute.
POWER_ATTRIBUTES: dict[str, str] = {
    "aws:ec2transitgateway/instanceState:InstanceState": "state",
    "gcp:compute/instance:Instance": "desiredStatus",
}


def power_state(cp: Checkpoint) -> list[str]:
    """Each machine's run state as last applied (``running`` / ``stopped`` for an EC2
    instance state, ``RUNNING`` / ``TERMINATED`` for a GCE instance), in state order;
    empty when the stack declares none. Old copies awaiting deletion are left out."""
    out: list[str] = []
    for r in cp.resources:
        attr = POWER_ATTRIBUTES.get(str(r.get("type", "")))
        if attr is None or r.get("delete") or not r.get("custom"):
            continue
        for where in ("outputs", "inputs"):
            value = (r.get(where) or {}).get(attr)
            if isinstance(value, str) and value:
                out.append(value)
                break
    return out


def counted_resources(cp: Checkpoint) -> int:
    return sum(
        1
        for r in cp.resources
        if r.get("custom")
        and not str(r.get("type", "")).startswith(PROVIDER_PREFIX)
        and r.get("type") != ROOT_STACK
        and not r.get("delete")
    )


def leftovers(cp: Checkpoint) -> list[str]:
    """Crash leftovers on resources: old copies awaiting deletion, pending replacements."""
    out = []
    for r in cp.resources:
        if r.get("delete"):
            out.append(f"{r.get('urn')} awaits deletion (an old copy after a replace)")
        elif r.get("pendingReplacement"):
            out.append(f"{r.get('urn')} is pending replacement")
    return out
