"""Frozen records for the ``status``, ``plan`` and ``apply`` paths, made without ``dataclasses``.

Importing ``dataclasses`` imports ``inspect`` (and with it ``ast``, ``dis`` and
``tokenize``), and every ``@dataclass`` compiles its ``__init__``, ``__repr__``,
``__eq__``, ``__hash__``, ``__setattr__`` and ``__delattr__`` from generated source
when its class is made: on those paths, run by agents in a loop, that was a
quarter of their own CPU. ``@record()`` gives a class the behaviour of
``@dataclass(frozen=True)`` with methods shared by every record, so making a class
compiles nothing:

* fields are the class's own annotations, in order (``ClassVar`` ones excepted);
  a default is the class attribute, or ``field(default=..., default_factory=...,
  repr=..., compare=...)``; a list, dict or set as a plain default is refused, as
  dataclasses refuse it;
* construction by position (field order) or keyword; a missing, unknown or
  repeated argument is a ``TypeError``;
* ``repr`` is ``Name(a=1, b='x')`` without the ``repr=False`` fields; equality is
  the same class with equal compared fields, and the hash is that of those fields
  (``record(eq=False)``: identity for both, as ``dataclass(eq=False)``);
* ``inspect.signature`` of the class lists its fields, as a dataclass's does;
* assigning or deleting an attribute raises :class:`FrozenInstanceError` (an
  ``AttributeError``); :func:`replace` makes a changed copy (of a dataclass too);
* to ``dataclasses`` itself a record is the frozen dataclass of its declaration:
  ``is_dataclass``, ``fields``, ``asdict``, ``astuple`` and ``replace`` work, as a
  program embedding the engine may rely on. The fields ``dataclasses`` reads are
  made the first time it asks (``__dataclass_fields__``), by ``make_dataclass``
  of the same declaration, so only that program pays for the import.

Type checkers see a frozen dataclass (``dataclass_transform``). A record has no
base of its own and no ``__post_init__``; the engine's other records are
standard dataclasses.
"""

from __future__ import annotations

from operator import itemgetter

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar, dataclass_transform

    T = TypeVar("T")
else:

    def dataclass_transform(**_: object) -> object:
        return lambda fn: fn


_MISSING: Any = object()


class FrozenInstanceError(AttributeError):
    """Assigning to or deleting an attribute of a record."""


class Field:
    """A field's default (or default factory) and whether ``repr`` and equality use it."""

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
    """A field's default or default factory, and whether ``repr`` and equality use it."""
    return Field(default, default_factory, repr, compare)


class _Made:
    """Stands in a new instance's values for a field made by its default factory."""

    __slots__ = ("factory",)

    def __init__(self, factory: Callable[[], Any]) -> None:
        self.factory = factory


class _Spec:
    """What the shared methods read of a record class."""

    __slots__ = ("fields", "index", "key", "names", "shown", "start", "unset")

    def __init__(self, fields: dict[str, Field]) -> None:
        self.fields = fields
        self.names = tuple(fields)
        self.index = {name: i for i, name in enumerate(self.names)}
        # a new instance's values before its arguments: a default, a factory to call
        # or _MISSING (required), in field order
        self.start: dict[str, Any] = {}
        for name, f in fields.items():
            made = _Made(f.default_factory) if f.default_factory is not None else _MISSING
            self.start[name] = f.default if f.default is not _MISSING else made
        self.unset = tuple(n for n, f in fields.items() if f.default is _MISSING)
        self.shown = tuple(n for n, f in fields.items() if f.repr)
        compared = [n for n, f in fields.items() if f.compare]
        # the compared fields' values as a tuple, from an instance's __dict__
        self.key: Callable[[dict[str, Any]], tuple[Any, ...]] = (
            itemgetter(*compared)
            if len(compared) > 1
            else lambda d: tuple([d[n] for n in compared])
        )


class _Signature:
    """A record class's ``__signature__`` (what ``inspect.signature`` reports): its
    fields, made when asked for (a factory's default shows as ``<factory>``, as a
    dataclass's does)."""

    def __get__(self, obj: object, owner: type) -> Any:
        import inspect

        spec: _Spec = owner.__record__  # type: ignore[attr-defined]
        annotations = owner.__dict__.get("__annotations__", {})  # noqa: RUF063 - as _make reads them
        P = inspect.Parameter
        params = [
            P(
                name,
                P.POSITIONAL_OR_KEYWORD,
                default=f.default
                if f.default is not _MISSING
                else _FACTORY
                if f.default_factory is not None
                else P.empty,
                annotation=annotations.get(name, P.empty),
            )
            for name, f in spec.fields.items()
        ]
        return inspect.Signature(params, return_annotation=None)


class _Factory:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()
_SIGNATURE = _Signature()


class _DataclassView:
    """A record class's ``__dataclass_fields__`` and ``__dataclass_params__``, what
    ``dataclasses`` reads of a dataclass: taken, the first time either is asked
    for, from the frozen dataclass ``make_dataclass`` makes of the same declaration,
    and then kept on the class in place of this descriptor."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: object, owner: type) -> Any:
        import dataclasses

        spec: _Spec = owner.__record__  # type: ignore[attr-defined]
        annotations = owner.__dict__.get("__annotations__", {})  # noqa: RUF063 - as _make reads them
        made = []
        for name, f in spec.fields.items():
            options: dict[str, Any] = {"repr": f.repr, "compare": f.compare}
            if f.default_factory is not None:
                options["default_factory"] = f.default_factory
            elif f.default is not _MISSING:
                options["default"] = f.default
            made.append((name, annotations.get(name, "Any"), dataclasses.field(**options)))
        twin: Any = dataclasses.make_dataclass(
            owner.__name__, made, frozen=True, eq="__eq__" in owner.__dict__
        )
        for name in _DATACLASS_VIEW:
            setattr(owner, name, getattr(twin, name))
        return getattr(twin, self.name)


_DATACLASS_VIEW = ("__dataclass_fields__", "__dataclass_params__")


def _is_classvar(annotation: object) -> bool:
    text = annotation if isinstance(annotation, str) else repr(annotation)
    return text.startswith(("ClassVar", "typing.ClassVar"))


_OWN = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__", "__post_init__")


def _make(cls: type[T], eq: bool) -> type[T]:
    if len(cls.__mro__) != 2 or any(name in cls.__dict__ for name in _OWN):
        raise TypeError(f"{cls.__name__}: a record has no base and no methods of its own in {_OWN}")
    fields: dict[str, Field] = {}
    # the class's own annotations (what inspect.get_annotations returns for a class;
    # importing inspect is what this module saves)
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():  # noqa: RUF063
        if _is_classvar(annotation):
            continue
        value = cls.__dict__.get(name, _MISSING)
        if isinstance(value, Field):
            f = value
            if f.default is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
        else:
            if value is not _MISSING and value.__class__.__hash__ is None:
                raise ValueError(
                    f"mutable default {type(value).__name__} for field {name} is not allowed: "
                    "use default_factory"
                )
            f = Field(value)
        fields[name] = f
    defaulted = False
    for name, f in fields.items():
        has_default = f.default is not _MISSING or f.default_factory is not None
        if defaulted and not has_default:
            raise TypeError(f"non-default argument {name!r} follows default argument")
        defaulted = defaulted or has_default
    ns: Any = cls
    ns.__record__ = _Spec(fields)
    ns.__signature__ = _SIGNATURE
    for name in _DATACLASS_VIEW:
        setattr(ns, name, _DataclassView(name))
    setattr(ns, "__match_args__", tuple(fields))  # noqa: B010 - mypy refuses the attribute
    ns.__init__ = _init
    ns.__repr__ = _repr
    ns.__setattr__ = _setattr
    ns.__delattr__ = _delattr
    if eq:
        ns.__eq__ = _eq
        ns.__hash__ = _hash
    return cls


@dataclass_transform(frozen_default=True, field_specifiers=(field, Field))
def record(*, eq: bool = True) -> Callable[[type[T]], type[T]]:
    """Make the decorated class a frozen record of its annotated fields (see the
    module); ``eq=False``: compared and hashed by identity."""
    return lambda cls: _make(cls, eq)


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    spec: _Spec = self.__record__
    values = spec.start.copy()
    if args:
        if len(args) > len(spec.names):
            raise TypeError(
                f"{type(self).__name__}() takes {len(spec.names)} positional arguments "
                f"but {len(args)} were given"
            )
        values.update(zip(spec.names, args, strict=False))
        if kwargs and not kwargs.keys().isdisjoint(spec.names[: len(args)]):
            twice = next(k for k in kwargs if k in spec.names[: len(args)])
            raise TypeError(f"{type(self).__name__}() got multiple values for argument {twice!r}")
    if kwargs:
        if not kwargs.keys() <= spec.index.keys():
            unknown = next(k for k in kwargs if k not in spec.index)
            raise TypeError(
                f"{type(self).__name__}() got an unexpected keyword argument {unknown!r}"
            )
        values.update(kwargs)
    for name in spec.unset:
        value = values[name]
        if value is _MISSING:
            raise TypeError(f"{type(self).__name__}() missing required argument: {name!r}")
        if value.__class__ is _Made:
            values[name] = value.factory()
    object.__setattr__(self, "__dict__", values)


def _repr(self: Any) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__record__.shown)
    return f"{type(self).__qualname__}({shown})"


def _eq(self: Any, other: Any) -> bool:
    if other.__class__ is not self.__class__:
        return NotImplemented
    key = self.__record__.key
    return key(self.__dict__) == key(other.__dict__)


def _hash(self: Any) -> int:
    return hash(self.__record__.key(self.__dict__))


def _setattr(self: Any, name: str, value: object) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def replace(obj: T, /, **changes: Any) -> T:
    """A copy of ``obj`` with ``changes``: ``dataclasses.replace`` for records (and,
    passed on to it, for dataclasses)."""
    spec: _Spec | None = getattr(type(obj), "__record__", None)
    if spec is None:
        import dataclasses

        return dataclasses.replace(obj, **changes)  # type: ignore[type-var]
    values = {name: getattr(obj, name) for name in spec.names}
    values.update(changes)
    return type(obj)(**values)


__all__ = ["Field", "FrozenInstanceError", "field", "record", "replace"]
