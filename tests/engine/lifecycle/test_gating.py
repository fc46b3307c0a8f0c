"""Set-based gating: every combination of the four actions, the spec's enum names as
aliases, the lossless merge with the .dreamrc default, and bad values."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from dreamlake.engine.contract.errors import UsageError
from dreamlake.engine.lifecycle.gating import (
    ACTIONS,
    ALIASES,
    DEFAULT,
    dreamrc_default,
    effective_gating,
    merge,
    parse_gating,
)

COMBOS = [frozenset(c) for n in range(5) for c in itertools.combinations(ACTIONS, n)]


@pytest.mark.parametrize("combo", COMBOS, ids=lambda c: "+".join(sorted(c)) or "none")
def test_every_combination_round_trips(combo: frozenset[str]) -> None:
    assert parse_gating(sorted(combo)) == combo
    assert parse_gating([a.upper() for a in combo]) == combo  # case of a step name
    # union with each alias is still lossless
    for alias, members in ALIASES.items():
        assert parse_gating([*sorted(combo), alias]) == combo | members


@pytest.mark.parametrize(
    ("alias", "expected"),
    [
        ("PROVISION_ONLY", {"provision"}),
        ("SUSPEND_ONLY", {"suspend"}),
        ("RESUME_ONLY", {"resume"}),
        ("NONE", set()),
        ("ALL", set(ACTIONS)),
    ],
)
def test_spec_enum_names_are_aliases(alias: str, expected: set[str]) -> None:
    assert parse_gating(alias) == expected
    assert parse_gating([alias]) == expected


def test_the_lossy_enum_case_is_expressible() -> None:
    """What the spec's enum cannot say: suspend and resume gated, provision not."""
    assert parse_gating(["SUSPEND_ONLY", "RESUME_ONLY"]) == {"suspend", "resume"}


@pytest.mark.parametrize("bad", ["destroy", ["suspend", 3], {"x": 1}, 5, ["PROVISION_AND_SUSPEND"]])
def test_bad_values_are_usage_errors(bad: object) -> None:
    with pytest.raises(UsageError):
        parse_gating(bad)


@pytest.mark.parametrize("root", [None, frozenset(), frozenset({"resume"})])
@pytest.mark.parametrize(
    "own", [*COMBOS, None], ids=lambda c: "unset" if c is None else "+".join(sorted(c)) or "none"
)
def test_merge_is_the_union(root: frozenset[str] | None, own: frozenset[str] | None) -> None:
    base = DEFAULT if root is None else root
    assert merge(root, own) == base | (own or frozenset())


def test_dreamrc_default_and_provider_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert dreamrc_default(tmp_path) is None
    assert effective_gating(tmp_path, None, "provider.json") == DEFAULT
    (tmp_path / ".dreamrc").write_text(
        "lab: !providers.SSH\n  host: x\nsettings:\n  gating: [SUSPEND_ONLY]\n"
    )
    assert dreamrc_default(tmp_path) == {"suspend"}
    assert effective_gating(tmp_path, ["resume"], "provider.json") == {"suspend", "resume"}
    (tmp_path / ".dreamrc").write_text("settings:\n  gating: []\n")
    assert effective_gating(tmp_path, None, "p") == frozenset()
    (tmp_path / ".dreamrc").write_text("settings:\n  gating: [nope]\n")
    with pytest.raises(UsageError, match=r"settings\.gating"):
        dreamrc_default(tmp_path)
