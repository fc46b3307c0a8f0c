"""Terraform state files (format version 4), read directly: no init, no process.

``terraform.tfstate`` absent or 0 bytes means "no state" to terraform; a 0-byte
file is also what a first apply killed before its first snapshot leaves behind.
"""

from __future__ import annotations

import json
from pathlib import Path

from ...settings.records import field, record

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from typing import Any

STATE_FILE = "terraform.tfstate"
ERRORED_STATE = "errored.tfstate"


# eq=False here and on the terraform backend's other records on the plan's path:
# none is compared or hashed by value.
@record(eq=False)
class StateFile:
    """One state snapshot as found on disk."""

    exists: bool
    empty: bool = False  # present but 0 bytes
    readable: bool = True
    serial: int | None = None
    lineage: str | None = None
    terraform_version: str | None = None
    resources: int = 0  # managed resource instances
    outputs: dict[str, Any] = field(default_factory=dict)  # non-sensitive values
    sensitive_outputs: tuple[str, ...] = ()
    providers: tuple[str, ...] = ()
    mtime: float | None = None
    error: str | None = None
    addresses: tuple[str, ...] = ()  # managed resource instances, as terraform names them
    tainted: tuple[str, ...] = ()  # of those, the ones a failed create or provisioner left

    @property
    def present(self) -> bool:
        """Infrastructure exists: at least one resource, or outputs (an outputs-only
        configuration has nothing else to show for an apply)."""
        return self.resources > 0 or bool(self.outputs) or bool(self.sensitive_outputs)


def _address(r: dict[str, Any], instance: Any) -> str:
    module = r.get("module")
    base = f"{str(module) + '.' if module else ''}{r.get('type')}.{r.get('name')}"
    key = instance.get("index_key") if isinstance(instance, dict) else None
    if key is None:
        return base
    return f"{base}[{key}]" if isinstance(key, int) else f"{base}[{json.dumps(key)}]"


def parse_state(data: dict[str, Any], *, mtime: float | None = None) -> StateFile:
    resources = 0
    providers: list[str] = []
    addresses: list[str] = []
    tainted: list[str] = []
    for r in data.get("resources") or []:
        if r.get("mode", "managed") != "managed":
            continue
        n = len(r.get("instances") or [])
        resources += n
        for i in r.get("instances") or []:
            addresses.append(_address(r, i))
            if isinstance(i, dict) and i.get("status") == "tainted":
                tainted.append(addresses[-1])
        if n and r.get("provider"):
            providers.append(str(r["provider"]))
    outputs: dict[str, Any] = {}
    sensitive: list[str] = []
    for k, v in (data.get("outputs") or {}).items():
        if not isinstance(v, dict):
            continue
        if v.get("sensitive"):
            sensitive.append(k)
        else:
            outputs[k] = v.get("value")
    return StateFile(
        exists=True,
        serial=data.get("serial"),
        lineage=data.get("lineage"),
        terraform_version=data.get("terraform_version"),
        resources=resources,
        outputs=outputs,
        sensitive_outputs=tuple(sensitive),
        providers=tuple(dict.fromkeys(providers)),
        mtime=mtime,
        addresses=tuple(addresses),
        tainted=tuple(tainted),
    )


def read_state(path: Path) -> StateFile:
    from ...settings.readers import MAX_STATE, FileProblem, loads_json, read_bytes

    try:
        st = path.stat()
        raw = read_bytes(path, limit=MAX_STATE)
    except FileNotFoundError:
        return StateFile(exists=False)
    except FileProblem as exc:
        return StateFile(exists=True, readable=False, error=f"{path}: {exc.reason}")
    except OSError as exc:
        return StateFile(exists=True, readable=False, error=f"cannot read {path}: {exc.strerror}")
    if not raw.strip():
        return StateFile(exists=True, empty=True, mtime=st.st_mtime)
    try:
        data = loads_json(raw, path=path, max_depth=None)
    except FileProblem as exc:
        return StateFile(
            exists=True, readable=False, mtime=st.st_mtime, error=f"{path} is {exc.reason}"
        )
    if not isinstance(data, dict) or not isinstance(data.get("version", 4), int):
        return StateFile(
            exists=True, readable=False, mtime=st.st_mtime, error=f"{path} is not a state"
        )
    try:
        return parse_state(data, mtime=st.st_mtime)
    except (AttributeError, TypeError, ValueError) as exc:
        return StateFile(
            exists=True,
            readable=False,
            mtime=st.st_mtime,
            error=f"{path} is not a terraform state ({type(exc).__name__}: {exc})",
        )


def state_fingerprint(path: Path) -> str:
    """A content fingerprint; a missing and a 0-byte state are the same "absent"
    (terraform reads both as no state)."""
    from ...settings.readers import MAX_STATE, read_bytes

    try:
        raw = read_bytes(path, limit=MAX_STATE)  # a FIFO or a device is not read
    except FileNotFoundError:
        return "absent"
    except (OSError, ValueError) as exc:
        return f"unreadable: {exc}"  # never equal to a saved plan's: plan again
    if not raw.strip():
        return "absent"
    from ...settings.digest import sha256  # asked only to check a saved plan against the state

    return "sha256:" + sha256(raw).hexdigest()


def cloud_providers(state: StateFile) -> tuple[str, ...]:
    """Providers in the state that talk to something outside this machine."""
    return tuple(
        p
        for p in state.providers
        if "terraform.io/builtin/" not in p
        and not any(
            p.endswith(f'hashicorp/{n}"]') for n in ("null", "random", "local", "time", "tls")
        )
    )
