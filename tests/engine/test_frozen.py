"""``@frozen`` records behave as ``@dataclass(frozen=True)`` does, for what the engine
uses of it; the status path imports neither ``dataclasses`` nor ``inspect``."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from typing import Any, ClassVar

import pytest
from dreamlake.engine.frozen import FrozenInstanceError, field, frozen, replace


@frozen
class Point:
    x: int
    y: int = 0
    tags: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    KIND: ClassVar[str] = "point"


@dataclasses.dataclass(frozen=True)
class DPoint:
    x: int
    y: int = 0
    tags: tuple[str, ...] = ()
    extra: dict[str, Any] = dataclasses.field(default_factory=dict, compare=False, repr=False)
    KIND: ClassVar[str] = "point"


def test_construction_matches_dataclasses() -> None:
    for cls in (Point, DPoint):
        p = cls(1, 2, ("a",))
        assert (p.x, p.y, p.tags, p.extra) == (1, 2, ("a",), {})
        assert cls(x=1).y == 0 and cls.KIND == "point"
        assert cls(1).extra is not cls(1).extra  # a fresh default per instance
        for bad in ((), (1, 2, (), {}, 5)):
            with pytest.raises(TypeError):
                cls(*bad)
        with pytest.raises(TypeError):
            cls(1, x=2)
        with pytest.raises(TypeError):
            cls(1, z=2)  # type: ignore[call-arg]


def test_equality_hash_repr_match_dataclasses() -> None:
    a, b = Point(1, extra={"n": 1}), Point(1, extra={"n": 2})
    assert a == b and hash(a) == hash(b) and a != Point(2) and a != (1, 0, ())
    assert len({a, b, Point(2)}) == 2
    assert repr(Point(1, 2)).replace("Point", "X") == repr(DPoint(1, 2)).replace("DPoint", "X")
    assert Point.__match_args__ == DPoint.__match_args__  # type: ignore[attr-defined]


def test_frozen_and_replace() -> None:
    p = Point(1)
    with pytest.raises(FrozenInstanceError):
        p.x = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del p.y  # type: ignore[misc]
    q = replace(p, y=5)
    assert (q.x, q.y, p.y) == (1, 5, 0) and type(q) is Point
    with pytest.raises(TypeError):
        replace(p, z=1)
    assert replace(DPoint(1), y=3) == DPoint(1, 3)  # a real dataclass is passed on


def test_inheritance_post_init_and_field_order() -> None:
    @frozen
    class Base:
        a: int
        b: str = "b"

    @frozen
    class Child(Base):
        c: str = "c"

        def __post_init__(self) -> None:
            object.__setattr__(self, "c", self.c.upper())

    assert Child.__match_args__ == ("a", "b", "c")  # type: ignore[attr-defined]
    got = Child(1, "x", "y")
    assert (got.a, got.b, got.c) == (1, "x", "Y")
    assert repr(got).endswith("Child(a=1, b='x', c='Y')")
    with pytest.raises(TypeError):

        @frozen
        class Wrong:
            a: int = 1
            b: int  # type: ignore[misc]

    with pytest.raises(ValueError, match="default_factory"):

        @frozen
        class Shared:
            items: list[int] = []


def test_status_path_imports_neither_dataclasses_nor_inspect(tmp_path: Any) -> None:
    code = (
        "import sys; from dreamlake.cli.entry import main; "
        f"main(['provider', 'status', '-n', 'lab', '--json', '--dream-dir', {str(tmp_path)!r}]); "
    )
    probe = (
        "import atexit, sys; atexit.register(lambda: print(sorted(m for m in "
        "('dataclasses', 'inspect') if m in sys.modules), file=sys.stderr)); "
    )
    out = subprocess.run([sys.executable, "-c", probe + code], capture_output=True, text=True)
    assert out.stderr.strip().splitlines()[-1] == "[]"
