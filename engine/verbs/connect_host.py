"""Which host ``connect`` goes to: ``--host`` written into ``adopt.json`` (only when
the file did not change meanwhile), the ``needs_input`` naming what is missing when
no host is known, and the daemon taken down on the host connect used before when it
goes to another."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

from ..contract import commands
from ..contract.errors import DreamlakeError
from ..contract.result import Blocking, EditThenContinue, ProviderLifecycleResult
from ..remote.base import Shell
from ..world.derive import Derived, Observation
from ..world.observe import to_result
from ..world.paths import ProviderPaths

ADOPTED_STACK_VENDOR = "pulumi-stack"
"""The vendor of an adopted Pulumi stack (``backends.pulumi.adopt``, not imported:
connect without pulumi stays light)."""
HOST_WHY = (
    "The machine the daemon runs on. Pass --host user@host, set host in adopt.json, "
    "or give the infrastructure a worker_host output."
)
ADOPTED_HOST_WHY = (
    "The machine the daemon runs on. The stack's outputs name no worker_host and its "
    "program is managed where it lives: pass --host USER@HOST to connect."
)


def needs_host(obs: Observation, dd: str | None, file: str) -> ProviderLifecycleResult:
    if obs.record is not None and obs.record.vendor == ADOPTED_STACK_VENDOR:
        # Nothing in the stack's folder is dreamlake's to edit: the next action names
        # what is missing, so following it is not the same command again.
        b = Blocking(key="host", reason="unset", file=file, why=ADOPTED_HOST_WHY)
        command = commands.connect(obs.name, dd, host="USER@HOST")
    else:
        b = Blocking(key="host", reason="unset", file=file, why=HOST_WHY)
        command = commands.connect(obs.name, dd)
    nxt = EditThenContinue(file=file, command=command)
    return to_result(obs, Derived("needs_input", nxt, (b,)))


def adopt_with_host(
    paths: ProviderPaths, host: str
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """``adopt.json`` as it is, and as ``--host`` makes it: the host, its user (else
    the login ssh would use) and port — what ``--host`` says, nothing more: the
    queues are a decision of their own, and one still open stops connect
    (``needs_input``) as it stops every verb. None when nothing would change, or the
    file is not a JSON object (the scan reports it). Nothing is written here."""
    import getpass

    from ..remote.ssh import parse_host

    try:
        text = paths.adopt_json.read_text(encoding="utf-8")
        data = json.loads(text)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    try:
        t = parse_host(host)
    except DreamlakeError:
        return None
    new = dict(data)
    new["host"] = t.host
    if t.user:
        new["user"] = t.user
    elif not new.get("user"):
        with contextlib.suppress(KeyError, OSError):
            new["user"] = getpass.getuser()
    if t.port != 22 or not isinstance(new.get("port"), int):
        new["port"] = t.port
    return None if new == data else (data, new)


def write_adopt(paths: ProviderPaths, before: dict[str, Any], after: dict[str, Any]) -> bool:
    """Write ``after`` atomically, unless the file changed since ``before`` was read
    (an edit made meanwhile is never overwritten)."""
    from ..settings.fsutil import atomic_write

    try:
        if json.loads(paths.adopt_json.read_text(encoding="utf-8")) != before:
            return False
    except (OSError, ValueError):
        return False
    atomic_write(paths.adopt_json, json.dumps(after, indent=2) + "\n")
    return True


def leave_recorded_host(
    obs: Observation,
    local: bool,
    target: Any,
    say: Callable[[str], None],
    factory: Callable[[Any], Shell],
) -> list[str]:
    """When ``connect`` goes to another host than the one it recorded (a new
    ``--host``, an edited adopt.json), stop and remove the daemon on the recorded
    one, so two daemons never claim the provider. Best effort: a host that cannot be
    reached is a note, and connect goes on."""
    from ..daemon import host as daemon_host
    from ..daemon import key as daemon_key
    from ..daemon.stop import stop_commands

    old = daemon_host.read(obs.dir)
    if old is None or daemon_host.same_host(old, local, target):
        return []
    say(f"taking the daemon down on {old.label}, the host connect used before")
    try:
        shell = factory(None if old.local else old.target)
    except DreamlakeError as exc:
        return [f"⚠ could not reach {old.label}, where the daemon ran before: {exc.message}"]
    try:
        out = shell.run(stop_commands(daemon_key.of(obs), remove=True), timeout=60).stdout
    except (DreamlakeError, OSError, EOFError) as exc:
        return [f"⚠ could not take the daemon down on {old.label}: {exc}"]
    finally:
        shell.close()
    if "stopped=" in out or "removed=install" in out:
        return [f"✓ took the daemon down on {old.label}, the host connect used before"]
    return []


__all__ = [
    "ADOPTED_STACK_VENDOR",
    "HOST_WHY",
    "adopt_with_host",
    "leave_recorded_host",
    "needs_host",
    "write_adopt",
]
