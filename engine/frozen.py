"""Frozen records for what ``status`` reads, made without ``dataclasses``.

Agents run ``status`` in a loop. On the records it builds (the observation, the
state, the template, the paths), ``dataclasses`` cost about a third of a run:
importing it imports ``inspect`` (and with it ``ast``, ``dis``, ``tokenize``), and
each class compiles its own ``__init__``, ``__eq__``, ``__hash__``, ``__repr__``,
``__setattr__`` and ``__delattr__`` from generated source. ``@frozen`` gives those
records the behaviour of ``@dataclass(frozen=True)`` that the engine relies on,
with methods shared by every class instead of compiled per class:

* construction by position (field order) or keyword, defaults and
  ``field(default_factory=...)`` (a list, dict or set as a plain default is refused,
  as dataclasses refuse it), ``TypeError`` for a missing, unknown or repeated
  argument; ``__post_init__`` when the class has one;
* equality (same class, compared fields equal) and a hash over the compared
  fields; ``field(compare=False)`` leaves a field out of both;
* a repr ``Name(a=1, b='x')`` without the ``field(repr=False)`` fields;
* assignment and deletion raise :class:`FrozenInstanceError` (an
  ``AttributeError``); :func:`replace` makes a changed copy;
* fields are inherited from a ``@frozen`` base, in order.

Type checkers see a frozen dataclass (``dataclass_transform``). Modules off the
``status`` path keep using ``dataclasses``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform

T = TypeVar("T")
_MISSING: Any = object()


class FrozenInstanceError(AttributeError):
    """Assigning to or deleting a field of a ``@frozen`` record."""


class Field:
    __slots__ = ("compare", "default", "default_factory", "repr")

    def __init__(
        self,
        default: Any = _MISSING,
        default_factory: Callable[[], Any] | None = None,
        repr: bool = True,
        compare: bool = True,
    ) -> None:
        if default is not _MISSING and default_factory is not None:
            raise ValueError("cannot specify both default and default_factory")
        self.default = default
        self.default_factory = default_factory
        self.repr = repr
        self.compare = compare


def field(
    *,
    default: Any = _MISSING,
    default_factory: Callable[[], Any] | None = None,
    repr: bool = True,
    compare: bool = True,
) -> Any:
    """A field's default (or default factory) and whether repr and equality use it."""
    return Field(default, default_factory, repr, compare)


def _is_classvar(annotation: object) -> bool:
    text = annotation if isinstance(annotation, str) else repr(annotation)
    return text.startswith(("ClassVar", "typing.ClassVar"))


@dataclass_transform(frozen_default=True, field_specifiers=(field, Field))
def frozen(cls: type[T]) -> type[T]:
    """Make ``cls`` a frozen record of its annotated fields (see the module)."""
    fields: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        fields.update(base.__dict__.get("__frozen_fields__", {}))
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():  # noqa: RUF063 - inspect costs what this module saves
        if _is_classvar(annotation):
            continue
        value = cls.__dict__.get(name, _MISSING)
        if isinstance(value, Field):
            spec = value
            if spec.default is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, spec.default)
        else:
            if value.__class__.__hash__ is None:  # a list, dict or set all instances would share
                raise ValueError(
                    f"mutable default {type(value).__name__} for field {name} is not allowed: "
                    "use field(default_factory=...)"
                )
            spec = Field(value)
        fields.pop(name, None)
        fields[name] = spec
    required_after_default = False
    for spec in fields.values():
        has_default = spec.default is not _MISSING or spec.default_factory is not None
        if not has_default and required_after_default:
            raise TypeError(f"{cls.__name__}: a field without a default follows one with one")
        required_after_default = required_after_default or has_default
    ns: Any = cls
    ns.__frozen_fields__ = fields
    ns.__frozen_compared__ = tuple(n for n, s in fields.items() if s.compare)
    ns.__frozen_shown__ = tuple(n for n, s in fields.items() if s.repr)
    setattr(ns, "__match_args__", tuple(fields))  # noqa: B010 - mypy refuses the attribute
    ns.__init__ = _init
    ns.__repr__ = _repr
    ns.__eq__ = _eq
    ns.__hash__ = _hash
    ns.__setattr__ = _setattr
    ns.__delattr__ = _delattr
    return cls


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    cls = type(self)
    fields: dict[str, Field] = cls.__frozen_fields__
    if len(args) > len(fields):
        raise TypeError(
            f"{cls.__name__}() takes {len(fields)} positional arguments but {len(args)} were given"
        )
    values = dict(zip(fields, args, strict=False))
    for key, value in kwargs.items():
        if key not in fields:
            raise TypeError(f"{cls.__name__}() got an unexpected keyword argument {key!r}")
        if key in values:
            raise TypeError(f"{cls.__name__}() got multiple values for argument {key!r}")
        values[key] = value
    put = object.__setattr__
    for name, spec in fields.items():
        if name in values:
            put(self, name, values[name])
        elif spec.default is not _MISSING:
            put(self, name, spec.default)
        elif spec.default_factory is not None:
            put(self, name, spec.default_factory())
        else:
            raise TypeError(f"{cls.__name__}() missing required argument: {name!r}")
    post = getattr(self, "__post_init__", None)
    if post is not None:
        post()


def _repr(self: Any) -> str:
    shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in type(self).__frozen_shown__)
    return f"{type(self).__qualname__}({shown})"


def _key(self: Any) -> tuple[Any, ...]:
    return tuple(getattr(self, n) for n in type(self).__frozen_compared__)


def _eq(self: Any, other: object) -> bool:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _key(self) == _key(other)


def _hash(self: Any) -> int:
    return hash(_key(self))


def _setattr(self: Any, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def replace(obj: T, /, **changes: Any) -> T:
    """A copy of the record ``obj`` with ``changes`` (``dataclasses.replace``)."""
    fields = getattr(type(obj), "__frozen_fields__", None)
    if fields is None:
        import dataclasses

        return dataclasses.replace(obj, **changes)  # type: ignore[type-var]
    for key in changes:
        if key not in fields:
            raise TypeError(f"{type(obj).__name__} has no field {key!r}")
    values = {n: getattr(obj, n) for n in fields}
    values.update(changes)
    return type(obj)(**values)


__all__ = ["Field", "FrozenInstanceError", "field", "frozen", "replace"]
