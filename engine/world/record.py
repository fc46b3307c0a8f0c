"""``provider.json``: identity and template provenance, written once, never a phase."""

from __future__ import annotations

import json
from pathlib import Path

from ..contract.errors import DreamlakeError
from ..contract.wire import Wire
from ..contract.wire import spec as Field

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see contract/forms.py)
if not TYPE_CHECKING:  # at run time the same forms, read by contract/wire.py, without typing
    from ..contract.forms import Any, Literal
else:
    from typing import Any, Literal

Backend = Literal["terraform", "pulumi", "none"]


def now_utc() -> str:
    """Now, UTC, to the second, as ``datetime.now(UTC).isoformat(timespec="seconds")``
    writes it: when a record or a plan is written (``time`` is already loaded, and
    ``datetime`` would be one more import on every plan)."""
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())


class ProviderRecord(Wire, extra="allow", frozen=False):
    """camelCase in the file; keys a newer version (or a person) added are kept."""

    name: str
    vendor: str
    backend: Backend = "terraform"
    template_version: int
    engine_version: str
    created_at: str = Field(default_factory=now_utc)
    # Optional settings a user may add by hand (pulumi backend URL, endpoints, mirrors).
    settings: dict[str, Any] = Field(default_factory=dict)
    # The provider's identity: unique across roots and machines, carried by its row in
    # the control plane and by its daemons, so claims are counted for this provider
    # and not for a namesake in another folder. Records written before it existed
    # have none: see ``identity``.
    id: str | None = None
    # Identity-level policy, not a phase: the pool the provider belongs to, and the
    # lifecycle steps that need a person's yes (None: the defaults).
    pool: str | None = None
    gating: list[str] | None = None

    def identity(self, provider_dir: Path) -> str:
        """``id``, else one derived from the provider's folder (stable while it stays put)."""
        if self.id:
            return self.id
        from ..settings.digest import sha256

        digest = sha256(str(provider_dir.resolve()).encode()).hexdigest()
        return f"dir-{digest[:20]}"

    def to_json(self) -> str:
        return (
            json.dumps(self.model_dump(mode="json", by_alias=True, exclude_none=True), indent=2)
            + "\n"
        )


def read_record(path: Path, dream_dir: str | None = None) -> ProviderRecord | None:
    """The record at ``path``, None when absent. A broken one is an error whose next
    action is to fix that file, then look again (``dream_dir``: the flag to repeat)."""
    from ..settings.readers import FileProblem, read_json

    try:
        data = read_json(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, FileProblem) as exc:
        from ..contract import commands
        from ..settings.readers import as_error

        raise as_error(
            exc, commands.status(path.parent.name, dream_dir), path=path, kind="bad_record"
        ) from None
    try:
        return ProviderRecord.model_validate(data)
    except (ValueError, TypeError) as exc:
        from ..contract import commands
        from ..contract.result import EditThenContinue

        raise DreamlakeError(
            f"{path} is not a valid provider.json: {exc}",
            kind="bad_record",
            next_action=EditThenContinue(
                file=str(path), command=commands.status(path.parent.name, dream_dir)
            ),
        ) from exc
