"""The `local` Pulumi program: this machine runs the daemon itself.

Nothing here needs a provider plugin: the :class:`LocalWorker` component only
checks the decisions and turns them into outputs the daemon starts from
(``worker_host`` is ``localhost``). It mirrors ``templates/local/terraform``.

``target_status`` (``active`` | ``suspended``) declares nothing here: on this
machine there is no instance to stop, so suspending and resuming act on the
daemon alone.

This file is self-contained (it needs only ``pydantic`` and, when run, ``pulumi``)
so a scaffolded copy is yours to edit. One code path, three ways in:

* inside your own Pulumi program: ``LocalWorker("lab", Config(...))``;
* as the Pulumi program of a project directory (``pulumi up`` runs ``__main__.py``,
  whose :func:`main` reads :class:`Config` and calls :func:`program`);
* inline from Automation API code: ``program(Config(...))``, which is what
  ``dreamlake provider plan/apply`` run.

Configuration is read from the stack's config in the project's namespace, e.g.
``dreamlake:workdir`` in ``Pulumi.<stack>.yaml``.
"""

from __future__ import annotations

import re
import sys
from functools import cache
from pathlib import Path
from typing import Any, Literal, get_origin

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

DECISIONS: tuple[str, ...] = ("workdir", "queues", "worker_name")
"""Config keys that are decisions (TEMPLATE.json ``decisions[].key``), in order."""

OUTPUTS: tuple[str, ...] = ("worker_host", "worker_name", "workdir", "queues", "daemon_args")
"""The stack outputs, the same names as the terraform template's ``outputs.tf``."""

TYPE = "dreamlake:local:LocalWorker"
"""The component's Pulumi type token."""

_QUEUE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_WORKER = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")


class Config(BaseModel):
    """The stack's config: one field per decision, validators mirroring the
    terraform ``validation`` blocks of ``variables.tf``."""

    model_config = ConfigDict(frozen=True, extra="ignore", coerce_numbers_to_str=True)

    workdir: str
    queues: list[str]
    worker_name: str
    # Lifecycle intent: "suspended" keeps the state and stops the work.
    target_status: Literal["active", "suspended"] = "active"

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


@cache
def component_class() -> Any:
    """:class:`LocalWorker`, defined on first use so importing this file does not
    import ``pulumi``."""
    import pulumi

    class LocalWorker(pulumi.ComponentResource):
        """This machine as a dreamlake worker: outputs only, no resources, no plugin.

        ``LocalWorker(name, config, opts, provider=...)``; its outputs are attributes
        of the same names (``worker_host``, ``daemon_args``, ...) and ``outputs`` maps
        them all. ``provider``: the dreamlake provider the daemon claims (default:
        ``name``).
        """

        def __init__(
            self,
            name: str,
            config: Config,
            opts: pulumi.ResourceOptions | None = None,
            *,
            provider: str | None = None,
        ) -> None:
            super().__init__(TYPE, name, None, opts)
            self.config = config
            self.worker_host = pulumi.Output.from_input("localhost")
            self.worker_name = pulumi.Output.from_input(config.worker_name)
            self.workdir = pulumi.Output.from_input(config.workdir.removesuffix("/"))
            self.queues = pulumi.Output.from_input(list(dict.fromkeys(config.queues)))
            self.daemon_args = pulumi.Output.from_input(daemon_args(config, provider or name))
            self.outputs: dict[str, Any] = {k: getattr(self, k) for k in OUTPUTS}
            self.register_outputs(self.outputs)

    return LocalWorker


def __getattr__(name: str) -> Any:
    if name == "LocalWorker":
        return component_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def program(config: Config, name: str = "dreamlake", provider: str | None = None) -> Any:
    """The stack: one :class:`LocalWorker` whose outputs become the stack outputs."""
    import pulumi

    worker = component_class()(name, config, provider=provider)
    for key, value in worker.outputs.items():
        pulumi.export(key, value)
    return worker


class ConfigError(Exception):
    """The stack config does not satisfy :class:`Config`. One line per key:
    ``dreamlake config: <key>: <what is wrong>``."""


def load_config(values: dict[str, Any]) -> Config:
    """Validate raw config values; raise :class:`ConfigError` naming each key."""
    try:
        return Config.model_validate(values)
    except ValidationError as exc:
        raise ConfigError("\n".join(_error_lines(exc))) from None


def _error_lines(exc: ValidationError) -> list[str]:
    lines = []
    for err in exc.errors():
        msg = "not set" if err["type"] == "missing" else str(err["msg"])
        msg = msg.removeprefix("Value error, ")
        if err["loc"]:
            keys = [".".join(str(p) for p in err["loc"])]
        else:  # a cross-field conflict names its keys
            keys = [str(k) for k in (err.get("ctx") or {}).get("keys") or ["(config)"]]
        lines += [f"dreamlake config: {key}: {msg}" for key in keys]
    return lines


def _getter(cfg: Any, annotation: Any) -> Any:
    """Pulumi's typed getter for a field of :class:`Config`."""
    if annotation is bool:
        return cfg.get_bool
    if annotation is int:
        return cfg.get_int
    if annotation is float:
        return cfg.get_float
    if get_origin(annotation) in (list, dict):
        return cfg.get_object
    return cfg.get


def read_pulumi_config() -> Config:
    """Read every field of :class:`Config` from the running stack's config with
    Pulumi's typed getters (``get_int``, ``get_float``, ``get_bool``,
    ``get_object``, ``get``); a value of the wrong type is reported like any
    other invalid value."""
    import pulumi

    cfg = pulumi.Config()
    values: dict[str, Any] = {}
    lines: list[str] = []
    mistyped: set[str] = set()
    for name, field in Config.model_fields.items():
        try:
            value = _getter(cfg, field.annotation)(name)
        except (pulumi.ConfigTypeError, ValueError) as exc:
            lines.append(f"dreamlake config: {name}: {exc}")
            mistyped.add(name)
            continue
        if value is not None:
            values[name] = value
    try:
        config = Config.model_validate(values)
    except ValidationError as exc:
        lines += [line for line in _error_lines(exc) if line.split(": ")[1] not in mistyped]
        raise ConfigError("\n".join(lines)) from None
    if lines:
        raise ConfigError("\n".join(lines))
    return config


def provider_of_program_dir(cwd: Path | None = None) -> str:
    """The provider a scaffolded program belongs to: the folder above its own
    (``.dream/providers/<name>/pulumi``), as the terraform template derives it. Its
    own folder: that of the running ``__main__.py`` (the engine runs it in-process),
    else the working directory (the pulumi CLI runs a program in its folder)."""
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    if cwd is None and main_file and Path(main_file).name == "__main__.py":
        return Path(main_file).resolve().parent.parent.name
    return (cwd or Path.cwd()).resolve().parent.name


def main() -> None:
    program(read_pulumi_config(), provider=provider_of_program_dir())


if __name__ == "__main__":
    main()
