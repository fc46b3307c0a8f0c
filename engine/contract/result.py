"""The result contract: what every verb returns, the CLI prints and agents read.

Wire format is camelCase JSON. ``nextAction`` is always present (``null`` only for
``connected``); optional fields are omitted when unknown. The JSON Schema printed
by ``dreamlake schema`` is generated from these models and snapshot-tested, so a
contract change is always deliberate.
"""

from __future__ import annotations

import json

from .wire import Discriminator, Wire, check
from .wire import spec as Field

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see forms.py)
if not TYPE_CHECKING:  # at run time the same forms, read by wire.py, without typing
    from .forms import Annotated, Any, Literal
else:
    from typing import Annotated, Any, Literal

ProviderStatus = Literal[
    "scaffolded",
    "needs_input",
    "ready",
    "applying",
    "applied",
    "connecting",
    "unclaimed",
    "connected",
    "exists",
    "error",
    "suspended",
]
"""The spec's ten states, plus ``suspended`` (the stateful lifecycle: infrastructure
or daemon stopped on purpose, its state kept). ``connected`` is the only one whose
``nextAction`` is null."""

STATUSES: tuple[str, ...] = ProviderStatus.__args__  # type: ignore[attr-defined]

OBSERVED_FAILURES: frozenset[str] = frozenset({"partial_apply", "failed_state"})
"""``error`` kinds that describe the world, not the tool: a failure the run *found*
(an apply that failed part-way, found by status or reconcile). The tool did its job —
it read the world and says where it stands — so they exit 0, like every coherent
state; their next action is the recovery (``plan``, never ``apply``)."""

BlockingReason = Literal["unset", "placeholder", "invalid", "conflict"]

Degraded = Literal[
    "no-credentials", "no-probe", "no-supervisor", "no-lakeshore", "lakeshore-untrusted", "drift"
]


class _Wire(Wire, extra="forbid", frozen=True):
    """camelCase on the wire, unknown keys refused, values immutable (engine/contract/wire.py:
    pydantic checks them only when the cheap checks do not accept them, and builds
    the schema)."""


class Blocking(_Wire):
    """One decision the engine could not make itself."""

    key: str = Field(description="Stable, machine-branchable decision key. Not the prose label.")
    reason: BlockingReason
    file: str | None = Field(default=None, description="Absolute path. Where to go and fix it.")
    line: int | None = Field(default=None, ge=1, description="1-based line in `file`.")
    observed: list[str] | None = Field(
        default=None,
        description="Best-effort account probe. ABSENT is normal: see `degraded`.",
    )
    why: str | None = Field(default=None, description="How to choose, from TEMPLATE.json.")
    message: str | None = Field(
        default=None,
        description="What is wrong with the current value (a validation's error message).",
    )


_APPROVAL = Field(
    default=None,
    description=(
        "true: a person's yes is needed first. Set exactly when the step this runs is "
        "gated for the provider (its effective gating set: provision and deprovision by "
        "default) — it spends or destroys money or data — on installing software, and on "
        "an admin's step on the control plane (creating a namespace). "
        "An agent stops here and asks instead of running `command`."
    ),
)


class EditThenContinue(_Wire):
    kind: Literal["edit_then_continue"] = "edit_then_continue"
    file: str
    command: str
    approval: bool | None = _APPROVAL


class Run(_Wire):
    kind: Literal["run"] = "run"
    command: str
    approval: bool | None = _APPROVAL


class Shell(_Wire):
    kind: Literal["shell"] = "shell"
    command: str
    host: str | None = None
    approval: bool | None = _APPROVAL


NextAction = Annotated[EditThenContinue | Run | Shell, Discriminator("kind")]


class PlanCounts(_Wire):
    add: int = Field(ge=0)
    change: int = Field(ge=0)
    destroy: int = Field(ge=0)


class ClaimWorker(_Wire):
    """One live worker claiming the provider (an extension beside ``instances``)."""

    instance_id: str
    host: str | None = None
    state: Literal["joining", "active"] | None = None
    last_seen: str | None = Field(default=None, description="RFC 3339 time of the last heartbeat.")
    queues: list[str] = Field(default_factory=list)


class Claim(_Wire):
    live: int = Field(ge=0)
    gone: int = Field(ge=0)
    instances: list[str] = Field(
        default_factory=list, description="Instance ids of the live workers."
    )
    workers: list[ClaimWorker] | None = Field(
        default=None, description="The live workers in detail: state, last heartbeat, queues."
    )


class LockInfo(_Wire):
    """A state lock seen in the world (terraform lock.info, a pulumi lock file,
    pulumi pending operations, a partial state)."""

    state: Literal["held", "stale"] = Field(
        description="held: a live process holds it (in flight). stale: left by an interrupted run."
    )
    path: str | None = None
    who: str | None = None
    since: str | None = Field(default=None, description="RFC 3339 time the lock was taken.")
    operation: str | None = None
    detail: str | None = None


class DriftedResource(_Wire):
    """One resource whose real state moved away from the state recorded for it, as the
    last drift check saw it (terraform ``plan -refresh-only``, pulumi ``preview
    --refresh``). Attribute names only: never their values."""

    address: str = Field(
        description="The resource's address: terraform's (`aws_instance.web`) or a pulumi URN."
    )
    action: str | None = Field(
        default=None,
        description="What the refresh found: update (changed outside) or delete (gone).",
    )
    attributes: list[str] = Field(
        default_factory=list,
        description="The attributes that changed (`tags.team`, `ingress`); empty when unknown.",
    )
    seen_at: str = Field(description="RFC 3339 time the drift check saw it.")


class TemplateInfo(_Wire):
    vendor: str
    version: int
    latest: int
    backend: Literal["terraform", "pulumi", "none"] = "terraform"


class ProviderLifecycleResult(_Wire):
    """What one lifecycle verb found and did. Branch on ``status`` and ``nextAction``."""

    status: ProviderStatus
    provider: str
    vendor: str | None = None
    server: str = Field(description="The control plane URL consulted ('' if none is configured).")
    namespace: str
    dir: str | None = Field(
        default=None, description="Absolute. The one directory this provider owns."
    )
    files: list[str] | None = Field(
        default=None, description="Files written BY THIS RUN. `[]` proves a no-op."
    )
    blocking: list[Blocking] | None = None
    plan: PlanCounts | None = None
    claim: Claim | None = None
    degraded: list[str] | None = Field(
        default=None,
        description=(
            'Unavailable but not fatal: "no-credentials", "no-probe", "no-supervisor", '
            '"no-lakeshore" (with "lakeshore-untrusted" when that is for a TLS reason: '
            "the server's certificate does not verify with the CA in use, names another "
            "host or has ended; set LAKESHORE_CA or .dreamrc lakeshore.ca); "
            '"drift": the last drift check found resources changed outside '
            "(listed in `drift`)."
        ),
    )
    next_action: NextAction | None = Field(
        description="REQUIRED, nullable. An agent reads exactly one key."
    )
    error: str | None = None
    kind: str | None = Field(
        default=None,
        description=(
            "Machine-readable kind: of the error when status is 'error', or of a refusal "
            "(a deliberate no, such as delete while infrastructure exists)."
        ),
    )
    # Extensions beyond the spec's fields; optional and omitted when unknown.
    root: str | None = Field(default=None, description="The folder holding .dream/.")
    lock: LockInfo | None = None
    template: TemplateInfo | None = None
    supervisor: str | None = Field(
        default=None, description="What runs the daemon: systemd-user, systemd-system or tmux."
    )
    host: str | None = Field(default=None, description="The host a daemon runs (or will run) on.")
    resources: int | None = Field(
        default=None, ge=0, description="Resources in the infrastructure state."
    )
    outputs: dict[str, Any] | None = Field(
        default=None, description="Non-sensitive outputs of the infrastructure state."
    )
    state_note: str | None = Field(
        default=None,
        description="Why the infrastructure state may not match the world without a refresh.",
    )
    drift: list[DriftedResource] | None = Field(
        default=None,
        description=(
            "Resources changed outside, as the last drift check (`provider drift`, or a "
            "watcher's drift pass) saw them against the current state; present with "
            '"drift" in `degraded`. `plan` shows what an apply would put back.'
        ),
    )

    _notes: list[str]
    _headline: str | None

    def _init_private(self) -> None:
        # Prose-only detail lines (not on the wire); the CLI prints them.
        object.__setattr__(self, "_notes", [])
        # The verb's own first line for its outcome, where the renderer's generic one
        # would say the wrong thing (connect's ``exists`` is not create's).
        object.__setattr__(self, "_headline", None)

    @check
    def _null_next_action_means_done(self) -> None:
        """``connected`` is the only state whose nextAction is null, and it always is
        but for drift (its next action is then ``plan``): a null anywhere else would
        tell an agent the run is over."""
        drifted = self.status == "connected" and bool(self.drift)
        if (self.status == "connected" and not drifted) != (self.next_action is None):
            raise ValueError(
                f"status {self.status!r} with nextAction "
                f"{'null' if self.next_action is None else self.next_action.kind!r}: "
                "nextAction is null exactly when the status is 'connected' without drift"
            )

    @property
    def notes(self) -> list[str]:
        return self._notes

    @property
    def headline(self) -> str | None:
        return self._headline

    def with_headline(self, line: str) -> ProviderLifecycleResult:
        object.__setattr__(self, "_headline", line)
        return self

    def with_notes(self, *lines: str) -> ProviderLifecycleResult:
        # a new list: never shared with a model_copy
        object.__setattr__(self, "_notes", [*self._notes, *lines])
        return self

    @property
    def exit_code(self) -> int:
        """0 for every coherent state, 1 only when the tool could not do its job. An
        ``error`` the run found in the world (:data:`OBSERVED_FAILURES`) is coherent."""
        return 1 if self.status == "error" and self.kind not in OBSERVED_FAILURES else 0

    def to_wire(self) -> dict[str, Any]:
        data = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        data["nextAction"] = (
            None
            if self.next_action is None
            else self.next_action.model_dump(mode="json", by_alias=True, exclude_none=True)
        )
        return data

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_wire(), indent=indent, ensure_ascii=False)


def json_schema() -> dict[str, Any]:
    """The JSON Schema of :class:`ProviderLifecycleResult`, as `dreamlake schema` prints it."""
    schema = ProviderLifecycleResult.model_json_schema(by_alias=True, mode="serialization")
    schema["required"] = sorted(set(schema.get("required", [])) | {"nextAction"})
    return schema
