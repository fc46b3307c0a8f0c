"""The `local` Pulumi program: this machine runs the daemon itself.

Nothing here needs a provider plugin: the :class:`LocalWorker` component only
checks the decisions and turns them into outputs the daemon starts from
(``worker_host`` is ``localhost``). It mirrors ``templates/local/terraform``.

``target_status`` (``active`` | ``suspended``) declares nothing here: on this
machine there is no instance to stop, so suspending and resuming act on the
daemon alone.

This file needs ``pydantic``, the helpers every vendor shares
(``dreamlake.stacks.support``) and, when run, ``pulumi``; a copy of it is yours to
edit. One code path, three ways in:

* inside your own Pulumi program: ``LocalWorker("lab", LocalWorkerArgs(...))`` (its
  arguments ``pulumi.Input`` values; a :class:`Config` is accepted too);
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
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from dreamlake.stacks import support
from dreamlake.stacks.support import ComponentArgs, lift
from dreamlake.stacks.support import ConfigError as ConfigError  # the vendor's, re-exported
from pydantic import BaseModel, ConfigDict, field_validator

if TYPE_CHECKING:
    import pulumi

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


def _daemon_args(workdir: str, queues: list[str], worker_name: str, provider: str) -> list[str]:
    return [
        "nymph", "--provider", provider, "--instance-id", worker_name,
        "--workdir", workdir.removesuffix("/"), "--queues", ",".join(dict.fromkeys(queues)),
    ]  # fmt: skip


def daemon_args(config: Config, provider: str) -> list[str]:
    """The daemon's command line, as the terraform template's ``daemon_args`` local
    (``provider``: the stack, named for the provider)."""
    return _daemon_args(config.workdir, config.queues, config.worker_name, provider)


class LocalWorkerArgs(ComponentArgs):
    """The arguments of :class:`LocalWorker`, in the provider SDKs' args-class style:
    each is a plain value or a ``pulumi.Input`` (e.g. ``workdir=volume.path``). Plain
    values are validated as :class:`Config` validates them (a bad one raises
    :class:`ConfigError` here); Outputs are taken as they are. The names are
    :class:`Config`'s."""

    workdir: pulumi.Input[str]
    queues: pulumi.Input[Sequence[pulumi.Input[str]]]
    worker_name: pulumi.Input[str]
    target_status: pulumi.Input[str]

    config_model = Config

    def __init__(
        self,
        *,
        workdir: pulumi.Input[str],
        queues: pulumi.Input[Sequence[pulumi.Input[str]]],
        worker_name: pulumi.Input[str],
        target_status: pulumi.Input[str] = "active",
    ) -> None:
        given = dict(locals())
        if isinstance(given["queues"], tuple):
            given["queues"] = list(given["queues"])
        self._take(given)


@cache
def component_class() -> Any:
    """:class:`LocalWorker`, defined on first use so importing this file does not
    import ``pulumi``."""
    import pulumi

    class LocalWorker(pulumi.ComponentResource):
        """This machine as a dreamlake worker: outputs only, no resources, no plugin.

        ``LocalWorker(name, args, opts, provider=...)`` with a :class:`LocalWorkerArgs`
        (or a :class:`Config`, or the same names as keyword arguments); its outputs
        are attributes of the same names (``worker_host``, ``daemon_args``, ...) and
        ``outputs`` maps them all. ``provider``: the dreamlake provider the daemon
        claims (default: ``name``).
        """

        def __init__(
            self,
            name: str,
            args: LocalWorkerArgs | Config | None = None,
            opts: pulumi.ResourceOptions | None = None,
            *,
            provider: str | None = None,
            **kwargs: Any,
        ) -> None:
            # the cast names the type where a checker cannot resolve dreamlake.stacks
            args = cast(LocalWorkerArgs, LocalWorkerArgs.from_call(args, kwargs))
            super().__init__(TYPE, name, None, opts)
            self.args = args
            out = pulumi.Output.from_input
            self.worker_host = out("localhost")
            self.worker_name = out(args.worker_name)
            self.workdir = out(lift(lambda w: w.removesuffix("/"), args.workdir))
            self.queues = out(lift(lambda q: list(dict.fromkeys(q)), args.queues))
            self.daemon_args = out(
                lift(
                    lambda w, q, n: _daemon_args(w, list(q), n, provider or name),
                    args.workdir,
                    args.queues,
                    args.worker_name,
                )
            )
            self.outputs: dict[str, Any] = {k: getattr(self, k) for k in OUTPUTS}
            self.register_outputs(self.outputs)

    return LocalWorker


def __getattr__(name: str) -> Any:
    if name == "LocalWorker":
        return component_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def program(
    config: Config | LocalWorkerArgs, name: str = "dreamlake", provider: str | None = None
) -> Any:
    """The stack: one :class:`LocalWorker` whose outputs become the stack outputs."""
    import pulumi

    worker = component_class()(name, config, provider=provider)
    for key, value in worker.outputs.items():
        pulumi.export(key, value)
    return worker


def load_config(values: dict[str, Any]) -> Config:
    """Validate raw config values; raise :class:`ConfigError` naming each key."""
    return support.load_config(Config, values)


def read_pulumi_config() -> Config:
    """Read :class:`Config` from the running stack's config with Pulumi's typed
    getters (``dreamlake.stacks.support.read_pulumi_config``)."""
    return support.read_pulumi_config(Config)


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
