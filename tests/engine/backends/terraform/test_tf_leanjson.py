"""``leanjson``: JSON read with the interpreter's accelerator, without the ``json``
package, the same as ``json.loads`` reads it; a flat record written as
``json.dumps(..., indent=2)`` writes it."""

from __future__ import annotations

import json

import pytest
from dreamlake.engine.backends.terraform import leanjson

DOCUMENTS = [
    '{"format": 1, "tf": "/p/t", "wanted": {"PATH": "/bin", "TERRAFORM_BINARY": null}}',
    '  \n{"a": [1, 2.5, -3e2, true, false, null, "x\\u00e9\\n\\"q\\""]}\n\n',
    "[]",
    '"just a string"',
    "12",
    '{"nested": {"deep": [{"k": "v"}, []]}, "unicode": "héllo ☃"}',
    '{"big": 123456789012345678901234567890, "nan": NaN, "inf": -Infinity}',
]


@pytest.mark.parametrize("text", DOCUMENTS)
def test_it_reads_what_json_reads(text: str) -> None:
    theirs = json.dumps(json.loads(text), sort_keys=True)  # NaN != NaN: compared as text
    for given in (text, text.encode("utf-8")):
        assert json.dumps(leanjson.loads(given), sort_keys=True) == theirs


@pytest.mark.parametrize(
    "text", ["", "   ", "{", '{"a": 1} x', '{"a": 1}{}', "[1,]", "{'a': 1}", "nul", '"\x01"']
)
def test_what_json_refuses_it_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        leanjson.loads(text.encode("utf-8"))


def test_bytes_that_are_not_utf8_are_refused() -> None:
    with pytest.raises(ValueError):
        leanjson.loads(b'{"a": "\xff"}')


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"format": 1, "verb": "apply", "pid": 42, "procStart": None, "yes": True},
        {"host": 'h\u00e9st "q" \\ \n\t', "started": 1764922000.123456, "no": False},
        {"zero": 0.0, "neg": -1, "tiny": 1e-300, "step": "provision"},
    ],
)
def test_a_flat_record_is_written_as_json_writes_it(data: dict[str, object]) -> None:
    assert leanjson.dumps_flat(data) == json.dumps(data, indent=2)


@pytest.mark.parametrize("value", [[1], {"a": 1}, float("nan"), float("inf")])
def test_what_is_not_a_flat_value_is_refused(value: object) -> None:
    with pytest.raises(ValueError):
        leanjson.dumps_flat({"k": value})
