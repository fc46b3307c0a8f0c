"""Lean wire models: the contract's one declaration, without paying for pydantic at import.

The engine declares a record one of two ways. What crosses the wire (the result
documents an agent reads, and the records the engine keeps on disk) is a ``Wire``
class here: a dataclass-like declaration with a lazily built pydantic model, the one
source of both the contract and its JSON Schema. Every other record is a frozen
``records.record`` (on the status, plan and apply paths) or a standard
``@dataclass`` (frozen where the engine never changes it).

Agents call ``dreamlake provider status --json`` in a loop, and importing pydantic
and building its validators costs more than the rest of a run. So the contract's
classes are declared here, on a small base:

* A ``Wire`` subclass declares fields with annotations and ``spec(...)`` defaults
  (description, bounds), and optional model-level ``check`` methods.
* Constructing one checks what is cheap (required fields, unknown keys, literal
  values, types, bounds) and converts nested dicts. Anything it does not accept is
  handed to the **pydantic mirror**, which raises pydantic's own ``ValidationError``
  (or coerces, as pydantic's lax mode does, and the mirror's values are taken).
* The mirror (``mirror(cls)``) is a pydantic model built on first use from the same
  declarations: it validates wire input (``model_validate``) and generates the JSON
  Schema (``model_json_schema``), so the declarations stay the one source of the
  contract. Serialization (``to_wire``/``model_dump``) is plain Python and gives the
  same JSON, key for key, as the pydantic model would.
* Annotations are read without ``typing``: a declaring module's ``Literal``,
  ``Annotated`` and ``Any`` are ``forms``' at run time (typing's own are read too);
  the mirror, with pydantic, turns them into typing's.
"""

from __future__ import annotations

import builtins
import sys
import types

from . import forms

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see forms.py)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any, ClassVar

_MISSING: Any = object()


class Spec:
    """A field's default and its schema facts (what pydantic's ``Field`` would hold)."""

    __slots__ = ("default", "default_factory", "description", "ge")

    def __init__(
        self,
        default: Any = _MISSING,
        *,
        default_factory: Callable[[], Any] | None = None,
        description: str | None = None,
        ge: int | None = None,
    ) -> None:
        self.default = default
        self.default_factory = default_factory
        self.description = description
        self.ge = ge


def spec(
    default: Any = _MISSING,
    *,
    default_factory: Callable[[], Any] | None = None,
    description: str | None = None,
    ge: int | None = None,
) -> Any:
    """A field's default plus its description and lower bound, like pydantic's Field."""
    return Spec(default, default_factory=default_factory, description=description, ge=ge)


class Discriminator:
    """``Annotated[A | B, Discriminator("kind")]``: a union told apart by one key."""

    __slots__ = ("key",)

    def __init__(self, key: str) -> None:
        self.key = key


def check(fn: Callable[[Any], None]) -> Callable[[Any], None]:
    """Mark a method as a model-level rule, run after every construction (it raises
    ValueError); the mirror runs it as a pydantic ``model_validator(mode="after")``."""
    fn.__wire_check__ = True  # type: ignore[attr-defined]
    return fn


def to_camel(name: str) -> str:
    """pydantic's camel alias: ``next_action`` → ``nextAction``."""
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


class _Field:
    __slots__ = ("alias", "name", "spec")

    def __init__(self, name: str, s: Spec) -> None:
        self.name = name
        self.alias = to_camel(name)
        self.spec = s

    @property
    def required(self) -> bool:
        return self.spec.default is _MISSING and self.spec.default_factory is None

    def default(self) -> Any:
        f = self.spec.default_factory
        return f() if f is not None else self.spec.default


class _Invalid(Exception):
    """The cheap checks did not accept a value: the mirror decides."""


class Wire:
    """Base of the lean models. Subclass keywords: ``extra`` ("forbid" | "allow"),
    ``frozen`` (bool)."""

    _fields: ClassVar[dict[str, _Field]]
    _by_alias: ClassVar[dict[str, _Field]]
    _checks: ClassVar[tuple[Callable[[Any], None], ...]]
    _extra: ClassVar[str] = "forbid"
    _frozen: ClassVar[bool] = True
    _kinds: ClassVar[dict[str, Callable[[Any], Any]] | None]
    _mirror: ClassVar[Any]

    def __init_subclass__(cls, extra: str | None = None, frozen: bool | None = None) -> None:
        if extra is not None:
            cls._extra = extra
        if frozen is not None:
            cls._frozen = frozen
        fields: dict[str, _Field] = {}
        for base in reversed(cls.__mro__):
            if base is object or base is Wire:
                continue
            # A class's own annotations (what inspect.get_annotations returns for a
            # class; importing inspect would cost status more than this module).
            for name, ann in base.__dict__.get("__annotations__", {}).items():  # noqa: RUF063
                if name.startswith("_") or "ClassVar" in str(ann):
                    continue
                raw = base.__dict__.get(name, _MISSING)
                s = raw if isinstance(raw, Spec) else Spec(raw)
                fields[name] = _Field(name, s)
        for name in fields:
            if name in cls.__dict__:
                delattr(cls, name)  # instances keep values in __dict__; no class default
        cls._fields = fields
        cls._by_alias = {f.alias: f for f in fields.values()}
        cls._checks = tuple(
            fn
            for base in reversed(cls.__mro__)
            for fn in base.__dict__.values()
            if getattr(fn, "__wire_check__", False)
        )
        cls._kinds = None  # resolved on first construction (the module is complete then)
        cls._mirror = None

    # -- construction -----------------------------------------------------------

    def __init__(self, **data: Any) -> None:
        try:
            values, extras = self._accept(data)
            object.__setattr__(self, "__dict__", values)
            if extras:
                values.update(extras)
            self._init_private()
            for fn in self._checks:
                fn(self)
        except (_Invalid, ValueError):
            validated = mirror(type(self)).model_validate(_plain(data))  # raises ValidationError
            object.__setattr__(self, "__dict__", _from_mirror_values(type(self), validated))
            self._init_private()

    def _init_private(self) -> None:
        """Subclasses set their private (non-wire) attributes here."""

    @classmethod
    def _accept(cls, data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        kinds = cls._kinds if cls._kinds is not None else _resolve(cls)
        values: dict[str, Any] = {}
        extras: dict[str, Any] = {}
        for key, value in data.items():
            f = cls._fields.get(key) or cls._by_alias.get(key)
            if f is None:
                if cls._extra != "allow":
                    raise _Invalid(key)
                extras[key] = value
                continue
            if f.name in values:
                raise _Invalid(key)
            v = kinds[f.name](value)
            if f.spec.ge is not None and v is not None and v < f.spec.ge:
                raise _Invalid(key)
            values[f.name] = v
        out: dict[str, Any] = {}
        for name, f in cls._fields.items():
            if name in values:
                out[name] = values[name]
            elif f.required:
                raise _Invalid(name)
            else:
                out[name] = f.default()
        return out, extras

    # -- pydantic-like API ------------------------------------------------------

    @classmethod
    def model_validate(cls, data: Any) -> Any:
        """Validate wire input (camelCase or field names) with the pydantic mirror."""
        if isinstance(data, cls):
            return data
        if isinstance(data, dict) and all(isinstance(k, str) for k in data):
            return cls(**data)  # the cheap checks first; the mirror when they refuse
        validated = mirror(cls).model_validate(_plain(data))
        obj = object.__new__(cls)
        object.__setattr__(obj, "__dict__", _from_mirror_values(cls, validated))
        obj._init_private()
        return obj

    @classmethod
    def model_json_schema(cls, **kw: Any) -> dict[str, Any]:
        schema: dict[str, Any] = mirror(cls).model_json_schema(**kw)
        return schema

    @property
    def model_extra(self) -> dict[str, Any]:
        """Keys kept beyond the fields (``extra="allow"``); private ``_x`` are not wire."""
        return {k: v for k, v in self.__dict__.items() if k not in self._fields and k[:1] != "_"}

    def model_copy(self, *, update: dict[str, Any] | None = None) -> Any:
        new = object.__new__(type(self))
        object.__setattr__(new, "__dict__", {**self.__dict__, **(update or {})})
        return new

    def model_dump(
        self, *, mode: str = "python", by_alias: bool = False, exclude_none: bool = False
    ) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, f in self._fields.items():
            v = self.__dict__[name]
            if v is None and exclude_none:
                continue
            out[f.alias if by_alias else name] = _dump(v, by_alias, exclude_none)
        for k, v in self.model_extra.items():
            if not (v is None and exclude_none):
                out[k] = _dump(v, by_alias, exclude_none)
        return out

    def model_dump_json(
        self, *, indent: int | None = None, by_alias: bool = False, exclude_none: bool = False
    ) -> str:
        """The JSON pydantic would write: UTF-8 as is, compact unless indented."""
        import json

        data = self.model_dump(mode="json", by_alias=by_alias, exclude_none=exclude_none)
        if indent is None:
            return json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        return json.dumps(data, ensure_ascii=False, indent=indent)

    # -- behaviour of a value ---------------------------------------------------

    def __setattr__(self, name: str, value: Any) -> None:
        if self._frozen and not name.startswith("_"):
            raise TypeError(f"{type(self).__name__} is frozen: use model_copy(update=...)")
        object.__setattr__(self, name, value)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(self.__dict__.get(k) == other.__dict__.get(k) for k in self._wire_keys(other))

    def _wire_keys(self, other: Wire) -> Iterator[str]:
        yield from self._fields
        yield from (k for k in {*self.model_extra, *other.model_extra})

    def __hash__(self) -> int:
        if not self._frozen:
            raise TypeError(f"unhashable type: {type(self).__name__!r}")
        return hash((type(self), *(self.__dict__[k] for k in self._fields)))

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={self.__dict__[k]!r}" for k in self._fields)
        return f"{type(self).__name__}({body})"


def _plain(v: Any) -> Any:
    """Input for the mirror: lean instances as dicts of their fields."""
    if isinstance(v, Wire):
        return {k: _plain(x) for k, x in v.__dict__.items() if k[:1] != "_"}
    if isinstance(v, list | tuple):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    return v


def _dump(v: Any, by_alias: bool, exclude_none: bool) -> Any:
    if isinstance(v, Wire):
        return v.model_dump(by_alias=by_alias, exclude_none=exclude_none)
    if isinstance(v, list | tuple):
        return [_dump(x, by_alias, exclude_none) for x in v]
    if isinstance(v, dict):
        return {k: _dump(x, by_alias, exclude_none) for k, x in v.items()}
    return v


# -- the cheap checks, one converter per field ----------------------------------


_COMPILED: dict[str, Any] = {}


def _hints(cls: type[Wire]) -> dict[str, Any]:
    """``typing.get_type_hints(cls, include_extras=True)`` for the wire fields, each
    annotation evaluated in its class's module and namespace as typing does (see
    :func:`_evaluated`)."""
    import sys

    hints: dict[str, Any] = {}
    for base in reversed(cls.__mro__):
        own = base.__dict__.get("__annotations__", {})  # noqa: RUF063 - as in __init_subclass__
        if not own:
            continue
        module = sys.modules.get(base.__module__)
        namespace = dict(vars(base))
        for name, ann in own.items():
            if name not in cls._fields:
                continue
            if isinstance(ann, str):
                ann = _evaluated(ann, vars(module) if module else {}, namespace)
            hints[name] = type(None) if ann is None else ann
    return hints


def _evaluated(text: str, module: dict[str, Any], namespace: dict[str, Any]) -> Any:
    """``eval(text, module, namespace)``. Most of the contract's annotations are a
    name or a name ``| None`` (``str``, ``Claim | None``): that name is looked up
    where ``eval`` would look (the class, its module, the builtins) and joined to
    ``None`` as ``eval`` joins it. Any other text is compiled, once per process
    (compiling was most of what resolving a class cost)."""
    head, bar, rest = text.partition(" | ")
    if head.isidentifier() and (not bar or rest == "None"):
        for scope in (namespace, module, vars(builtins)):
            if head in scope:
                return scope[head] | None if bar else scope[head]
    code = _COMPILED.get(text)
    if code is None:
        code = _COMPILED[text] = compile(text, "<annotation>", "eval")
    return eval(code, module, namespace)


def _resolve(cls: type[Wire]) -> dict[str, Callable[[Any], Any]]:
    hints = _hints(cls)
    kinds = {name: _converter(hints[name]) for name in cls._fields}
    cls._kinds = kinds
    return kinds


def _parts(t: Any) -> tuple[Any, tuple[Any, ...]]:
    """``(origin, args)`` of an annotation, as ``typing.get_origin`` / ``get_args``
    say them, with typing's ``Literal``, ``Annotated`` and ``Union`` read as
    ``forms``'. typing's own are asked of typing only where it is loaded: a module
    that declares with them has imported it."""
    if isinstance(t, forms.Alias):
        return t.origin, t.__args__
    if isinstance(t, types.UnionType):
        return forms.Union, t.__args__
    if isinstance(t, types.GenericAlias):
        return t.__origin__, t.__args__
    typing = sys.modules.get("typing")
    if typing is None:
        return None, ()
    origin = typing.get_origin(t)
    same = {typing.Annotated: forms.Annotated, typing.Literal: forms.Literal}
    same[typing.Union] = forms.Union
    return same.get(origin, origin), typing.get_args(t)


def _is_any(t: Any) -> bool:
    typing = sys.modules.get("typing")
    return t is forms.Any or (typing is not None and t is typing.Any)


def _converter(t: Any) -> Callable[[Any], Any]:
    origin, args = _parts(t)
    if origin is forms.Annotated:
        inner, *meta = args
        disc = next((m for m in meta if isinstance(m, Discriminator)), None)
        if disc is not None:
            return _discriminated(_parts(inner)[1], disc.key)
        return _converter(inner)
    if origin is forms.Union:
        members = [a for a in args if a is not type(None)]
        nullable = len(members) < len(args)
        convs = [_converter(a) for a in members]

        def union(v: Any) -> Any:
            if v is None and nullable:
                return None
            for c in convs:
                try:
                    return c(v)
                except _Invalid:
                    continue
            raise _Invalid(v)

        return union
    if origin is forms.Literal:
        allowed = set(args)

        def literal(v: Any) -> Any:
            if isinstance(v, bool) or v not in allowed:
                raise _Invalid(v)
            return v

        return literal
    if origin is list:
        item = _converter(args[0]) if args else _any

        def listing(v: Any) -> Any:
            if not isinstance(v, list):
                raise _Invalid(v)
            return [item(x) for x in v]

        return listing
    if origin is dict:
        return _instance(dict)
    if _is_any(t):
        return _any
    if isinstance(t, type) and issubclass(t, Wire):
        return _nested(t)
    if t is bool:
        return _instance(bool)
    if t is int:
        return lambda v: v if isinstance(v, int) and not isinstance(v, bool) else _raise(v)
    if t is str:
        return _instance(str)
    return _raise  # anything else: the mirror decides


def _any(v: Any) -> Any:
    return v


def _raise(v: Any) -> Any:
    raise _Invalid(v)


def _instance(kind: type) -> Callable[[Any], Any]:
    def conv(v: Any) -> Any:
        if not isinstance(v, kind):
            raise _Invalid(v)
        return v

    return conv


def _nested(cls: type[Wire]) -> Callable[[Any], Any]:
    def conv(v: Any) -> Any:
        if isinstance(v, cls):
            return v
        if isinstance(v, dict):
            return cls(**v)  # its own mirror raises if it is really invalid
        raise _Invalid(v)

    return conv


def _discriminated(members: tuple[Any, ...], key: str) -> Callable[[Any], Any]:
    by_tag = {m._fields[key].spec.default: m for m in members}

    def conv(v: Any) -> Any:
        if isinstance(v, tuple(by_tag.values())):
            return v
        if isinstance(v, dict) and v.get(key) in by_tag:
            return by_tag[v[key]](**v)
        raise _Invalid(v)

    return conv


# -- the pydantic mirror ----------------------------------------------------------


def mirror(cls: type[Wire]) -> Any:
    """The pydantic model with ``cls``'s fields, config and checks (built once)."""
    if cls.__dict__.get("_mirror") is not None:
        return cls._mirror
    from pydantic import ConfigDict, Field, create_model, model_validator

    hints = _hints(cls)
    fields: dict[str, Any] = {}
    for name, f in cls._fields.items():
        kw: dict[str, Any] = {}
        if f.spec.default_factory is not None:
            kw["default_factory"] = f.spec.default_factory
        elif f.spec.default is not _MISSING:
            kw["default"] = f.spec.default
        if f.spec.description is not None:
            kw["description"] = f.spec.description
        if f.spec.ge is not None:
            kw["ge"] = f.spec.ge
        fields[name] = (_translate(hints[name]), Field(**kw))
    validators = {
        f"check_{fn.__name__}": model_validator(mode="after")(_as_validator(fn))
        for fn in cls._checks
    }
    config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=cls._frozen,
        extra=cls._extra,  # type: ignore[typeddict-item]
    )
    model = create_model(
        cls.__name__,
        __config__=config,
        __doc__=cls.__doc__,
        __module__=cls.__module__,
        __validators__=validators,  # type: ignore[arg-type]
        **fields,
    )
    model.__wire__ = cls  # type: ignore[attr-defined]
    cls._mirror = model
    return model


def _as_validator(fn: Callable[[Any], None]) -> Callable[[Any], Any]:
    def validate(self: Any) -> Any:
        fn(self)
        return self

    validate.__name__ = fn.__name__
    return validate


def _translate(t: Any) -> Any:
    """A declared type in typing's own forms, with every Wire class replaced by its
    pydantic mirror."""
    import typing

    from pydantic import Field

    origin, args = _parts(t)
    if origin is forms.Annotated:
        inner, *meta = args
        meta = [Field(discriminator=m.key) if isinstance(m, Discriminator) else m for m in meta]
        return typing.Annotated[(_translate(inner), *meta)]  # type: ignore[valid-type]
    if origin is forms.Union:
        return typing.Union[tuple(_translate(a) for a in args)]  # noqa: UP007
    if origin is forms.Literal:
        return typing.Literal[args]
    if origin is list:
        return list[_translate(args[0])]  # type: ignore[misc]
    if origin is dict:
        return dict[_translate(args[0]), _translate(args[1])]  # type: ignore[misc]
    if _is_any(t):
        return typing.Any
    if isinstance(t, type) and issubclass(t, Wire):
        return mirror(t)
    return t


def _from_mirror_values(cls: type[Wire], m: Any) -> dict[str, Any]:
    values = {name: _unmirror(getattr(m, name)) for name in cls._fields}
    for k, v in (getattr(m, "model_extra", None) or {}).items():
        values[k] = _unmirror(v)
    return values


def _unmirror(v: Any) -> Any:
    wire = getattr(type(v), "__wire__", None)
    if wire is not None:
        obj = object.__new__(wire)
        object.__setattr__(obj, "__dict__", _from_mirror_values(wire, v))
        obj._init_private()
        return obj
    if isinstance(v, list):
        return [_unmirror(x) for x in v]
    if isinstance(v, dict):
        return {k: _unmirror(x) for k, x in v.items()}
    return v
