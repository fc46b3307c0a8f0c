"""The providers table: NAME LAUNCHER DISPATCH KWARGS, bare name first."""

from __future__ import annotations

from dreamlake.controlplane.registry.render import (
    kwargs_summary,
    provider_detail,
    providers_table,
)


def test_table_marks_hidden_and_deleted() -> None:
    rows = [
        {
            "name": "aws",
            "launcher": "EC2",
            "dispatch": "daemon",
            "kwargs": {"region": "r", "c": {"$secret": "s"}},
        },
        {"name": "lab", "launcher": "SSH", "dispatch": "direct", "kwargs": {}, "hidden": True},
        {
            "name": "old",
            "launcher": "SLURM",
            "dispatch": "direct",
            "kwargs": {"n": {"a": 1}},
            "deletedAt": "2026-01-02T03:04:05.000000Z",
        },
    ]
    lines = providers_table(rows).splitlines()
    assert lines[0].split() == ["NAME", "LAUNCHER", "DISPATCH", "KWARGS"]
    assert lines[1].split()[:4] == ["aws", "EC2", "daemon", "region=r"]
    assert "c=$secret:s" in lines[1]
    assert lines[2].startswith("lab  [H]") and lines[2].split()[2:4] == ["SSH", "direct"]
    assert lines[3].startswith("old  [D 2026-01-02T03:04:05.000000Z]") and "n.a=1" in lines[3]


def test_summary_truncates() -> None:
    assert kwargs_summary({}) == "-"
    assert kwargs_summary({"k": "v" * 100}, width=20).endswith("…")


def test_a_row_with_text_that_is_not_unicode_is_marked() -> None:
    row = {
        "name": "poison",
        "launcher": "SSH",
        "dispatch": "direct",
        "kwargs": {"host": "a\\udcffb"},
        "invalidText": ["kwargs.host"],
    }
    line = providers_table([row]).splitlines()[1]
    assert line.startswith("poison  [bad text: kwargs.host]")
    assert "bad text:  kwargs.host (not valid Unicode" in provider_detail(row)
