"""The MCP tools' table: one row per lifecycle verb — the tool's name, the CLI
command whose flags are its inputs, the engine function it calls, and whether it
spends or destroys money (see ``server``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

AGENT_LOOP_URI = "dreamlake://agent-loop"

_NAMED = frozenset({"name"})


@dataclass(frozen=True)
class Argument:
    key: str  # the tool argument: the long flag without dashes, '-' -> '_'
    param: str  # the CLI parameter's name (the engine keyword unless renamed)
    schema: dict[str, Any]
    required: bool
    flags: tuple[str, ...] = ()  # its spellings on the command line (-n, --name)


SET_VALUES = Argument(
    "values",
    "values",
    {
        "type": "object",
        "description": 'Decision key -> value, e.g. {"region": "us-east-1", "queues": '
        '["default"]}. Keys are the .blocking[].key of the last result; a value is a '
        "string, number, boolean, list or object (text is read as the variable's declared "
        "type).",
        "minProperties": 1,
        "additionalProperties": {
            "type": ["string", "number", "boolean", "array", "object"],
        },
    },
    True,
)


@dataclass(frozen=True)
class VerbTool:
    """One verb as a tool. ``command`` is the CLI path whose flags become the inputs;
    ``engine`` is ``module:function``, called with the flags' parameter names as
    keywords (``rename`` maps a flag's parameter name to the engine's keyword
    where they differ)."""

    name: str
    command: tuple[str, ...]
    engine: str
    destructive: bool = False
    read_only: bool = False
    rename: Mapping[str, str] = field(default_factory=dict)
    # Flags that are not this tool's (another surface of the same command), and flags
    # the CLI leaves optional for such a surface but this tool needs.
    skip: frozenset[str] = frozenset()
    require: frozenset[str] = _NAMED
    # The engine returns one result per provider: the tool returns {"providers": [...]}.
    many: bool = False
    # Arguments that are not flags of the command (its KEY=VALUE words, say).
    extra: tuple[Argument, ...] = ()
    # The description, where the command's own help names flags this tool has not.
    doc: str | None = None
    # An argument that, when true, makes the call one over every provider: the engine
    # function ``many_engine`` answers it, as {"providers": [...]}.
    many_flag: str | None = None
    many_engine: str | None = None


TOOLS: tuple[VerbTool, ...] = (
    VerbTool(
        "provider_create",
        ("provider", "create"),
        "dreamlake.engine.verbs.create:create",
        skip=frozenset({"file"}),  # create -f registers a control-plane row: not a lifecycle step
        require=_NAMED,
        doc="Scaffold a provider once and report every decision it cannot make itself.",
    ),
    VerbTool(
        "provider_status",
        ("provider", "status"),
        "dreamlake.engine.verbs.status:status",
        read_only=True,
    ),
    VerbTool("provider_plan", ("provider", "plan"), "dreamlake.engine.verbs.plan:plan"),
    VerbTool("provider_drift", ("provider", "drift"), "dreamlake.engine.verbs.drift:drift"),
    VerbTool(
        "provider_apply",
        ("provider", "apply"),
        "dreamlake.engine.verbs.apply:apply",
        destructive=True,
    ),
    VerbTool("provider_connect", ("provider", "connect"), "dreamlake.engine.verbs.connect:connect"),
    VerbTool(
        "provider_set",
        ("provider", "set"),
        "dreamlake.engine.verbs.set_values:set_values",
        extra=(SET_VALUES,),
        doc="Set decision values in the provider's own file (terraform.tfvars, "
        "Pulumi.<name>.yaml or adopt.json), the rest of the file kept, so a person still "
        "reviews one file. Each value is read as its variable's declared type and checked by "
        "the same decision scan as provider_create; a value it refuses "
        "is not written and the result is an error saying why. This is how an agent without "
        "a file editor follows a nextAction of kind edit_then_continue.",
    ),
    # Day 2. suspend / resume / reconcile perform only ungated steps unless yes is true
    # (the engine's gating): a gated one comes back with an approval next action.
    VerbTool(
        "provider_suspend",
        ("provider", "suspend"),
        "dreamlake.engine.verbs.suspend:suspend",
        rename={"timeout": "drain_timeout"},
    ),
    VerbTool("provider_resume", ("provider", "resume"), "dreamlake.engine.verbs.resume:resume"),
    VerbTool(
        "provider_reconcile",
        ("provider", "reconcile"),
        "dreamlake.engine.verbs.reconcile:reconcile",
        require=frozenset(),
        doc="Move the provider towards its target_status: one planned step; gated steps only "
        "with yes: true. With all: true (and no name), every provider of the root, one after "
        "the other, as {providers: [...]}.",
        many_flag="all",
        many_engine="dreamlake.engine.verbs.reconcile:reconcile_all",
    ),
    VerbTool(
        "provider_destroy",
        ("provider", "destroy"),
        "dreamlake.engine.verbs.destroy:destroy",
        destructive=True,
        require=_NAMED,
    ),
    VerbTool(
        "provider_delete",
        ("provider", "delete"),
        "dreamlake.engine.verbs.delete:delete",
        destructive=True,
        require=_NAMED,
    ),
    VerbTool(
        "provider_list",
        ("provider", "list"),
        "dreamlake.engine.verbs.listing:list_providers",
        read_only=True,
        many=True,
        require=frozenset(),
    ),
)

TOOLS_BY_NAME = {t.name: t for t in TOOLS}

DESTRUCTIVE_NOTE = (
    "DESTRUCTIVE: this spends or destroys money. Nothing is done unless `yes` is true, and "
    "the server never sets it: pass `yes: true` only when a person asked for this step."
)


__all__ = [
    "AGENT_LOOP_URI",
    "DESTRUCTIVE_NOTE",
    "SET_VALUES",
    "TOOLS",
    "TOOLS_BY_NAME",
    "Argument",
    "VerbTool",
]
