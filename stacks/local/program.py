"""The `local` Pulumi program: this machine runs the daemon itself.

Nothing here needs a provider plugin: the program only checks the decisions and
turns them into stack outputs the daemon starts from (``worker_host`` is
``localhost``). It mirrors ``templates/local/terraform``.

This file is self-contained (it needs only ``pydantic`` and, when run, ``pulumi``)
so a scaffolded copy is yours to edit. Run it three ways:

* as the Pulumi program of a project directory (``pulumi up`` runs ``__main__.py``);
* inline from your own Automation API code: ``program(Config(...))``;
* through ``dreamlake provider plan/apply``, which runs the scaffolded copy inline.

Configuration is read from the stack's config in the project's namespace, e.g.
``dreamlake:workdir`` in ``Pulumi.<stack>.yaml``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

DECISIONS: tuple[str, ...] = ("workdir", "queues", "worker_name")
"""Config keys that are decisions (TEMPLATE.json ``decisions[].key``), in order."""

_TEXT = (str, str | None)
_QUEUE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_WORKER = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")


class Config(BaseModel):
    """The stack's config: one field per decision, validators mirroring the
    terraform ``validation`` blocks of ``variables.tf``."""

    model_config = ConfigDict(frozen=True, extra="ignore", coerce_numbers_to_str=True)

    workdir: str
    queues: list[str]
    worker_name: str

    @field_validator("workdir")
    @classmethod
    def _workdir(cls, v: str) -> str:
        if not (v.startswith("/") and len(v) > 1):
            raise ValueError(
                'The workdir must be an absolute path other than /, e.g. "/var/lib/nymph".'
            )
        return v

    @field_validator("queues")
    @classmethod
    def _queues(cls, v: list[str]) -> list[str]:
        if not v or not all(_QUEUE.match(q) for q in v):
            raise ValueError(
                "List at least one queue; queue names match ^[a-z0-9][a-z0-9-]*$ "
                "(lowercase letters, digits and dashes)."
            )
        return v

    @field_validator("worker_name")
    @classmethod
    def _worker_name(cls, v: str) -> str:
        if not _WORKER.match(v):
            raise ValueError(
                "The worker_name must match ^[a-z0-9][a-z0-9-]{0,62}$ (lowercase letters, "
                "digits and dashes, at most 63 characters)."
            )
        return v


def daemon_args(config: Config, provider: str) -> list[str]:
    """The daemon's command line, as the terraform template's ``daemon_args`` local
    (``provider``: the stack, named for the provider)."""
    workdir = config.workdir.removesuffix("/")
    queues = ",".join(dict.fromkeys(config.queues))
    return [
        "nymph", "--provider", provider, "--instance-id", config.worker_name,
        "--workdir", workdir, "--queues", queues,
    ]  # fmt: skip


def program(config: Config) -> None:
    """Declare the stack: outputs only, no resources, no provider plugin."""
    import pulumi

    pulumi.export("worker_host", "localhost")
    pulumi.export("worker_name", config.worker_name)
    pulumi.export("workdir", config.workdir.removesuffix("/"))
    pulumi.export("queues", list(dict.fromkeys(config.queues)))
    pulumi.export("daemon_args", daemon_args(config, pulumi.get_stack()))


class ConfigError(Exception):
    """The stack config does not satisfy :class:`Config`. One line per key:
    ``dreamlake config: <key>: <what is wrong>``."""


def load_config(values: dict[str, Any]) -> Config:
    """Validate raw config values; raise :class:`ConfigError` naming each key."""
    try:
        return Config.model_validate(values)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            msg = "not set" if err["type"] == "missing" else str(err["msg"])
            msg = msg.removeprefix("Value error, ")
            if err["loc"]:
                keys = [".".join(str(p) for p in err["loc"])]
            else:  # a cross-field conflict names its keys
                keys = [str(k) for k in (err.get("ctx") or {}).get("keys") or ["(config)"]]
            lines += [f"dreamlake config: {key}: {msg}" for key in keys]
        raise ConfigError("\n".join(lines)) from None


def read_pulumi_config() -> Config:
    """Read every field of :class:`Config` from the running stack's config."""
    import pulumi

    cfg = pulumi.Config()
    values: dict[str, Any] = {}
    for name, field in Config.model_fields.items():
        raw = cfg.get(name)
        if raw is None:
            continue
        if field.annotation in _TEXT:
            values[name] = raw
        else:
            try:
                values[name] = json.loads(raw)
            except ValueError:
                values[name] = raw
    return load_config(values)


def main() -> None:
    program(read_pulumi_config())


if __name__ == "__main__":
    main()
