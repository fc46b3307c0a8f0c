"""``Literal``, ``Annotated`` and ``Any`` as the contract's declarations use them at run
time, without importing ``typing``.

Importing ``typing`` costs about 5 ms of CPU, on every ``status`` and beside the
terraform an ``apply --yes`` started ahead, and nothing else on those paths needs it.
A module that declares ``Wire`` records (``result.py``, ``world/record.py``) imports
typing's forms for type checkers and these at run time::

    TYPE_CHECKING = False
    if not TYPE_CHECKING:
        from ..contract.forms import Annotated, Any, Literal
    else:
        from typing import Annotated, Any, Literal

A form subscripted is an :class:`Alias` (``__args__`` as typing names them), and
``|`` joins aliases, classes and ``None`` into a ``Union`` alias, flattened as
typing flattens it. ``wire`` reads these (and typing's own forms, where a module
declares with them) for its cheap checks, and turns them into typing's for the
pydantic mirror, which imports typing with pydantic.
"""

from __future__ import annotations

import types


class Form:
    """A special form: ``Literal``, ``Annotated``, ``Any`` (and ``Union``, what ``|``
    makes)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __getitem__(self, args: object) -> Alias:
        return Alias(self, args if isinstance(args, tuple) else (args,))

    def __or__(self, other: object) -> Alias:
        return union(self, other)

    def __ror__(self, other: object) -> Alias:
        return union(other, self)

    def __repr__(self) -> str:
        return f"typing.{self.name}"


class Alias:
    """A subscripted form: ``origin`` and its ``__args__``."""

    __slots__ = ("__args__", "origin")

    def __init__(self, origin: Form, args: tuple[object, ...]) -> None:
        self.origin = origin
        self.__args__ = args

    def __or__(self, other: object) -> Alias:
        return union(self, other)

    def __ror__(self, other: object) -> Alias:
        return union(other, self)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Alias):
            return NotImplemented
        return self.origin is other.origin and self.__args__ == other.__args__

    def __hash__(self) -> int:
        return hash((self.origin.name, self.__args__))

    def __repr__(self) -> str:
        return f"{self.origin!r}[{', '.join(map(repr, self.__args__))}]"


Literal = Form("Literal")
Annotated = Form("Annotated")
Any = Form("Any")
Union = Form("Union")


def union(*members: object) -> Alias:
    """``a | b | ...``: the members' union, nested unions flattened, ``None`` as its
    type and each member once, as typing makes it."""
    args: list[object] = []
    for m in members:
        if m is None:
            args.append(type(None))
        elif (isinstance(m, Alias) and m.origin is Union) or isinstance(m, types.UnionType):
            args.extend(m.__args__)
        else:
            args.append(m)
    return Alias(Union, tuple(dict.fromkeys(args)))


__all__ = ["Alias", "Annotated", "Any", "Form", "Literal", "Union", "union"]
