"""What every vendor's Pulumi program shares: values known only when the program
runs, the provider a caller passed, and the stack config checked against the
vendor's ``Config`` model with one ``dreamlake config: <key>: <why>`` line per key.

Each ``dreamlake.stacks.<vendor>.program`` imports these, so a fix here reaches
every vendor. This module needs only ``pydantic``; ``pulumi`` is imported inside
the functions that run in a program, so importing it (and a vendor's config
model) does not import ``pulumi``.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Mapping
from typing import Any, ClassVar, Self, TypeVar, get_origin

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


class ConfigError(ValueError):
    """The stack config does not satisfy the vendor's ``Config``. One line per key:
    ``dreamlake config: <key>: <what is wrong>``."""


def given_provider(opts: Any, package: str) -> Any:
    """The ``package`` provider the caller passed in ``opts`` (``provider=`` or
    ``providers=``), else None."""
    if opts is None:
        return None
    if getattr(opts.provider, "package", None) == package:
        return opts.provider
    provs = opts.providers
    if isinstance(provs, Mapping):
        return provs.get(package)
    return next((p for p in provs or [] if getattr(p, "package", None) == package), None)


def is_input(value: Any) -> bool:
    """``value`` is not known until the program runs: a ``pulumi.Output``, an
    awaitable, or a list or mapping holding one."""
    pulumi = sys.modules.get("pulumi")
    if pulumi is not None and isinstance(value, pulumi.Output):
        return True
    if inspect.isawaitable(value):
        return True
    if isinstance(value, list | tuple):
        return any(is_input(v) for v in value)
    if isinstance(value, Mapping):
        return any(is_input(v) for v in value.values())
    return False


def lift(fn: Any, *values: Any) -> Any:
    """``fn(*values)``: computed now when every value is plain, else an ``Output``."""
    if any(is_input(v) for v in values):
        import pulumi

        return pulumi.Output.all(*values).apply(lambda vs: fn(*vs))
    return fn(*values)


def check_plain(model: type[BaseModel], values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with every plain one validated and coerced as ``model`` (the
    vendor's ``Config``) does it; a value only known when the program runs
    (:func:`is_input`) is kept as given, and a rule across keys is checked only when
    all of them are plain. Raises :class:`ConfigError`, one line per key."""
    unknown = {k for k, v in values.items() if is_input(v)}
    fields = model.model_fields
    plain = {k: v for k, v in values.items() if k in fields and k not in unknown and v is not None}
    partial = model.model_construct(**plain)
    out = dict(values)
    lines: list[str] = []
    for key, value in plain.items():
        try:
            model.__pydantic_validator__.validate_assignment(partial, key, value)
        except ValidationError as exc:
            lines += error_lines(exc, unknown)
        else:
            out[key] = getattr(partial, key)
    if lines:
        raise ConfigError("\n".join(dict.fromkeys(lines)))
    return out


class ComponentArgs:
    """What every vendor's args class (``GpuWorkersArgs``, ...) shares: plain values
    validated and coerced as the vendor's ``Config`` (``config_model``) does it, and
    the two other ways a component takes its arguments (a ``Config``, or keyword
    arguments). A subclass's ``__init__`` names the arguments and ends with
    ``self._take(locals())``."""

    config_model: ClassVar[type[BaseModel]]

    def _take(self, given: Mapping[str, Any]) -> None:
        """``given`` (the subclass's ``__init__`` locals) as attributes, each plain value
        checked (:func:`check_plain`); raises :class:`ConfigError`."""
        values = {k: v for k, v in given.items() if k != "self"}
        vars(self).update(check_plain(self.config_model, values))

    @classmethod
    def from_config(cls, config: BaseModel) -> Self:
        """The arguments a scaffolded stack's ``Config`` stands for (its region or
        project is explicit, so the component makes its own provider for it)."""
        return cls(**config.model_dump())

    @classmethod
    def from_call(cls, args: object, kwargs: Mapping[str, Any]) -> Self:
        """The component's arguments from one of this class, a ``Config`` or keyword
        arguments (exactly one of them)."""
        if args is None:
            return cls(**kwargs)
        if kwargs:
            raise TypeError("pass either an args object or keyword arguments, not both")
        if isinstance(args, cls.config_model):
            return cls.from_config(args)
        if isinstance(args, cls):
            return args
        raise TypeError(f"expected {cls.__name__} or Config, got {type(args).__name__}")


def load_config(model: type[M], values: dict[str, Any]) -> M:
    """Validate raw config values; raise :class:`ConfigError` naming each key."""
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        raise ConfigError("\n".join(error_lines(exc))) from None


def error_lines(exc: ValidationError, unknown: set[str] | None = None) -> list[str]:
    """One line per key. ``unknown``: keys whose values are not known yet; a
    cross-field conflict naming one of them is not reported."""
    lines = []
    for err in exc.errors():
        msg = "not set" if err["type"] == "missing" else str(err["msg"])
        msg = msg.removeprefix("Value error, ")
        if err["loc"]:
            keys = [".".join(str(p) for p in err["loc"])]
        else:  # a cross-field conflict names its keys
            keys = [str(k) for k in (err.get("ctx") or {}).get("keys") or ["(config)"]]
            if unknown and set(keys) & unknown:
                continue
        lines += [f"dreamlake config: {key}: {msg}" for key in keys]
    return lines


def _getter(cfg: Any, annotation: Any) -> Any:
    """Pulumi's typed getter for a field of the model."""
    if annotation is bool:
        return cfg.get_bool
    if annotation is int:
        return cfg.get_int
    if annotation is float:
        return cfg.get_float
    if get_origin(annotation) in (list, dict):
        return cfg.get_object
    return cfg.get


def read_pulumi_config(model: type[M]) -> M:
    """Read every field of ``model`` from the running stack's config with Pulumi's
    typed getters (``get_int``, ``get_float``, ``get_bool``, ``get_object``,
    ``get``); a value of the wrong type is reported like any other invalid value."""
    import pulumi

    cfg = pulumi.Config()
    values: dict[str, Any] = {}
    lines: list[str] = []
    mistyped: set[str] = set()
    for name, field in model.model_fields.items():
        try:
            value = _getter(cfg, field.annotation)(name)
        except (pulumi.ConfigTypeError, ValueError) as exc:
            lines.append(f"dreamlake config: {name}: {exc}")
            mistyped.add(name)
            continue
        if value is not None:
            values[name] = value
    try:
        config = model.model_validate(values)
    except ValidationError as exc:
        lines += [line for line in error_lines(exc) if line.split(": ")[1] not in mistyped]
        raise ConfigError("\n".join(lines)) from None
    if lines:
        raise ConfigError("\n".join(lines))
    return config


__all__ = [
    "ComponentArgs",
    "ConfigError",
    "check_plain",
    "error_lines",
    "given_provider",
    "is_input",
    "lift",
    "load_config",
    "read_pulumi_config",
]
