"""``records.record``: a frozen record with the behaviour of ``@dataclass(frozen=True)``
that the engine uses (construction, defaults and factories, repr, equality and hash,
frozen-ness, ``replace``), made without ``dataclasses``. Each engine record made
with it is also held against the dataclass of its own declaration
(``tests/engine/world/test_records.py``)."""

from __future__ import annotations

import inspect
from typing import ClassVar

import pytest
from dreamlake.engine.settings.records import FrozenInstanceError, field, record, replace


@record()
class _Sample:
    limit: ClassVar[int] = 3
    name: str
    count: int = 0
    tags: list[str] = field(default_factory=list)
    note: str = field(default="", repr=False, compare=False)


def test_construction_refuses_what_a_dataclass_refuses() -> None:
    assert _Sample("a") == _Sample(name="a", count=0, tags=[], note="other")
    assert _Sample("a").tags is not _Sample("a").tags  # a new list each time
    assert repr(_Sample("a", 2, ["x"], "n")) == "_Sample(name='a', count=2, tags=['x'])"
    assert _Sample.__match_args__ == ("name", "count", "tags", "note")
    assert _Sample.limit == 3 and _Sample.count == 0
    for bad in (
        lambda: _Sample(),
        lambda: _Sample("a", name="b"),
        lambda: _Sample("a", size=1),
        lambda: _Sample("a", 1, [], "", "extra"),
    ):
        with pytest.raises(TypeError):
            bad()
    with pytest.raises(ValueError, match="mutable default"):

        @record()
        class _Shared:
            items: list[str] = []

    with pytest.raises(TypeError, match="follows default"):

        @record()
        class _Order:
            a: int = 0
            b: int


def test_replace_passes_a_dataclass_on_to_dataclasses() -> None:
    from dreamlake.engine.remote.base import CommandResult

    done = CommandResult(command="true", returncode=0, stdout="", stderr="")
    assert replace(done, returncode=1) == CommandResult("true", 1, "", "")


def test_signature_equality_hash_and_frozen() -> None:
    assert str(inspect.signature(_Sample)) == (
        "(name: 'str', count: 'int' = 0, tags: 'list[str]' = <factory>, note: 'str' = '') -> None"
    )
    one = _Sample("a", 1)
    assert one == replace(one, note="ignored") and one != replace(one, count=2)
    assert one != ("a", 1, [], "")  # another class is never equal
    with pytest.raises(TypeError):
        hash(one)  # a list field: as the dataclass's hash of its fields

    @record()
    class Point:
        x: int
        y: int = 0

    assert hash(Point(1, 2)) == hash((1, 2)) and {Point(1, 2): "a"}[Point(1, 2)] == "a"
    with pytest.raises(FrozenInstanceError):
        Point(1).x = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del Point(1).y  # type: ignore[misc]

    @record(eq=False)
    class Handle:
        name: str

    h = Handle("a")
    assert h != Handle("a") and hash(h) == object.__hash__(h)
