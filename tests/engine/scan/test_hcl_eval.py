"""The validation-condition evaluator: what it computes, and what it leaves alone."""

from __future__ import annotations

from typing import Any

import pytest
from dreamlake.engine.scan.hcl_eval import EvalError, Unevaluable, equal, evaluate, parse_template

SCOPE: dict[str, Any] = {
    "var": {
        "queues": ["default", "gpu-a"],
        "workdir": "/srv/nymph",
        "n": 3,
        "cidr": "10.42.0.0/16",
        "tags": {"team": "ml", "env": "dev"},
    }
}


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("7 % 3", 1),
        ("10 / 4", 2.5),
        ("-var.n", -3),
        ("!true || 1 + 2 * 3 == 7", True),
        ("true && false || true", True),
        ('var.n > 2 ? "big" : "small"', "big"),
        ('"1" == 1', False),
        ("length(var.queues) > 0", True),
        ("length(var.workdir)", 10),
        ('contains(["a", "b"], "b")', True),
        ('alltrue([for q in var.queues : can(regex("^[a-z0-9][a-z0-9-]*$", q))])', True),
        ('anytrue([for q in var.queues : startswith(q, "gpu")])', True),
        ('[for q in var.queues : upper(q) if q != "default"]', ["GPU-A"]),
        ("{for k, v in var.tags : v => k}", {"ml": "team", "dev": "env"}),
        ('can(regex("^/", var.workdir))', True),
        ('can(regex("^x", var.workdir))', False),
        ('regex("^/(\\\\w+)", var.workdir)', ["srv"]),
        ('"${var.workdir}/work"', "/srv/nymph/work"),
        ('"a\\"b\\\\c"', 'a"b\\c'),
        ("can(cidrhost(var.cidr, 0))", True),
        ('can(cidrhost("10.0.0.0/33", 0))', False),
        ("cidrsubnet(var.cidr, 4, 1)", "10.42.16.0/20"),
        ('try(tonumber("x"), -1)', -1),
        ('split(",", "a,b")', ["a", "b"]),
        ('lookup(var.tags, "team", "none")', "ml"),
        ("var.tags.team", "ml"),
        ("var.queues[1]", "gpu-a"),
        ("floor(var.n) == var.n", True),
        ('trimsuffix(var.workdir, "/nymph")', "/srv"),
        ("max(var.n, 7)", 7),
    ],
)
def test_evaluates(expr: str, expected: Any) -> None:
    assert evaluate(expr, SCOPE) == expected


@pytest.mark.parametrize(
    "expr",
    [
        'format("%s", "x")',  # a function the evaluator does not implement
        'can(format("%s", "x"))',  # can() does not hide that
        "var.other",  # a variable it does not know
        "var.queues[*][*]",  # a splat inside a splat
        '"%{if true}x%{endif}"',  # template directive
        "local.x",
    ],
)
def test_unevaluable(expr: str) -> None:
    with pytest.raises(Unevaluable):
        evaluate(expr, SCOPE)


@pytest.mark.parametrize(
    "expr", ['regex("^x", var.workdir)', 'tonumber("x")', "length(null)", 'contains(["a"], null)']
)
def test_errors_like_terraform(expr: str) -> None:
    with pytest.raises(EvalError):
        evaluate(expr, SCOPE)


def test_template_without_quotes() -> None:
    assert evaluate(parse_template("x-${1 + 1}")) == "x-2"
    assert evaluate(parse_template("$${literal}")) == "${literal}"


def test_equality_keeps_types_apart() -> None:
    assert not equal(True, 1)
    assert equal(1, 1.0)
    assert equal(["a", {"k": 1}], ["a", {"k": 1}])
    assert not equal(["a"], ["a", "b"])


def test_regex_follows_re2_not_python() -> None:
    # RE2's "$" does not match before a final newline; Python's does.
    scope = {"var": {"s": "abc\n"}}
    assert evaluate('can(regex("^[a-z]+$", var.s))', scope) is False
    assert evaluate('can(regex("(?m)^[a-z]+$", var.s))', scope) is True
    assert evaluate('can(regex("^[$a-c]+\\\\z", "a$"))', scope) is True
    # POSIX classes are ASCII sets in RE2.
    assert evaluate('can(regex("^[[:alpha:]]+$", "abc"))') is True
    assert evaluate('can(regex("^[[:alpha:]]+$", "é"))') is False


def test_regex_runs_on_re2_where_the_translation_gave_up() -> None:
    """With google-re2 (a base dependency) the scan judges what the translation to
    Python's re left for plan: Unicode classes, Unicode case folding, any subject
    under a nested repetition."""
    pytest.importorskip("re2", reason="needs google-re2 (the base install)")
    assert evaluate('regex("\\\\pL+", "ab1 héllo")') == "ab"
    assert evaluate('can(regex("^\\\\p{Greek}+$", "αβγ"))') is True
    assert evaluate('can(regex("(?i)^é$", "É"))') is True
    assert evaluate('can(regex("^(a+)+$", "' + "a" * 40 + 'b"))') is False  # linear time
    assert evaluate('regex("^(?P<k>[a-z]+)=(?P<v>[0-9]+)$", "x=1")') == {"k": "x", "v": "1"}
    assert evaluate('regexall("[0-9]", "a1b2")') == ["1", "2"]
    with pytest.raises(Unevaluable):  # Go and Python step past empty matches apart
        evaluate('regexall("[0-9]*", "a1")')
    with pytest.raises(Unevaluable):  # C++ RE2's own escape, not Go's
        evaluate('regex("\\\\C", "a")')


def test_regex_without_re2_translates_or_leaves_it_for_plan(monkeypatch: Any) -> None:
    import sys

    from dreamlake.engine.scan.expr import re2 as ours

    monkeypatch.setitem(sys.modules, "re2", None)  # as if google-re2 were not installed
    ours._re2.cache_clear()
    try:
        assert evaluate('regex("^[a-z]+", "abc1")') == "abc"
        with pytest.raises(Unevaluable):
            evaluate('regex("\\\\pL+", "abc")')
    finally:
        ours._re2.cache_clear()
