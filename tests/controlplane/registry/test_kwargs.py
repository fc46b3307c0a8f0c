"""Dotted --kwarg / --field parsing, kwargs files, and update patches."""

from __future__ import annotations

from pathlib import Path

import pytest
from dreamlake.controlplane.registry.kwargs import (
    KwargsError,
    apply_patch,
    assignments_to_patch,
    build_kwargs,
    parse_value,
    secret_refs,
)


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        ("us-east-1", "us-east-1"),
        ("22", 22),
        ("1.5", 1.5),
        ("-3", -3),
        ("true", True),
        ("null", None),
        ("0123", "0123"),
        ("sg-0123abc", "sg-0123abc"),
        (
            "arn:aws:iam::123456789012:instance-profile/x",
            "arn:aws:iam::123456789012:instance-profile/x",
        ),
        ('{"$secret":"aws"}', {"$secret": "aws"}),
        ('["a","b"]', ["a", "b"]),
        ('"22"', "22"),
        ("", ""),
        ("a=b", "a=b"),
    ],
)
def test_parse_value(raw: str, want: object) -> None:
    assert parse_value(raw) == want


def test_dotted_keys_nest() -> None:
    patch = assignments_to_patch(
        ["aws_credentials.accessKeyId=AKIA", "aws_credentials.region=r", "a.b.c=1", "x=1"]
    )
    assert patch == {
        "aws_credentials": {"accessKeyId": "AKIA", "region": "r"},
        "a": {"b": {"c": 1}},
        "x": 1,
    }
    assert assignments_to_patch(["a=1", "a.b=2"]) == {"a": {"b": 2}}


@pytest.mark.parametrize("bad", ["noequals", "=v", "a..b=1", "a.=1", "k={broken"])
def test_bad_assignments(bad: str) -> None:
    with pytest.raises(KwargsError):
        assignments_to_patch([bad])


def test_kwargs_file_is_the_base(tmp_path: Path) -> None:
    y = tmp_path / "k.yaml"
    y.write_text("region: us-east-1\nnested:\n  a: 1\n  b: 2\ndrop: me\n")
    assert build_kwargs(["nested.b=3", "drop=null", "new=x"], y) == {
        "region": "us-east-1",
        "nested": {"a": 1, "b": 3},
        "new": "x",
    }
    j = tmp_path / "k.json"
    j.write_text('{"a": [1, 2]}')
    assert build_kwargs([], j) == {"a": [1, 2]}
    (tmp_path / "list.yaml").write_text("- 1\n")
    with pytest.raises(KwargsError, match="mapping"):
        build_kwargs([], tmp_path / "list.yaml")
    (tmp_path / "bad.yaml").write_text("a: [1,\n")
    with pytest.raises(KwargsError, match=r"bad\.yaml:\d"):
        build_kwargs([], tmp_path / "bad.yaml")
    with pytest.raises(KwargsError, match="cannot read"):
        build_kwargs([], tmp_path / "missing.yaml")


def test_apply_patch_null_deletes_and_merges() -> None:
    base = {"a": {"b": 1, "c": 2}, "d": 1, "m": {"$secret": "s"}}
    assert apply_patch(base, {"a": {"b": None}, "d": None, "e": {"f": None, "g": 1}}) == {
        "a": {"c": 2},
        "m": {"$secret": "s"},
        "e": {"g": 1},
    }
    assert apply_patch(base, {"m": {"x": 1}}) == {"a": {"b": 1, "c": 2}, "d": 1, "m": {"x": 1}}
    assert base == {"a": {"b": 1, "c": 2}, "d": 1, "m": {"$secret": "s"}}


def test_secret_refs() -> None:
    assert secret_refs({"a": {"$secret": "x"}, "l": [{"b": {"$secret": "y"}}]}) == [
        ("a", "x"),
        ("l[0].b", "y"),
    ]
