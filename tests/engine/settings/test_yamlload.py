"""The one YAML loader's bounds: alias expansion, nesting, size — refused from the
text and the node graph, before anything is constructed."""

from __future__ import annotations

import time

import pytest
import yaml
from dreamlake.engine.settings import yamlload
from dreamlake.engine.settings.readers import FileProblem, loads_json

BOMB = "\n".join(
    ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    + [
        f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    ]
)


def test_an_alias_bomb_is_refused_fast() -> None:
    t0 = time.monotonic()
    with pytest.raises(yamlload.YamlBoundsError, match="alias"):
        yamlload.safe_load(BOMB)
    assert time.monotonic() - t0 < 5


@pytest.mark.parametrize(
    "text",
    [
        "a: " + "[" * 5000 + "]" * 5000,
        "a: " + "{x: " * 200 + "1" + "}" * 200,
        "".join(f"{' ' * i}k{i}:\n" for i in range(200)) + " " * 200 + "v: 1\n",
    ],
    ids=["flow-lists", "flow-maps", "block"],
)
def test_deep_nesting_is_refused(text: str) -> None:
    with pytest.raises(yaml.YAMLError, match="nested deeper"):
        yamlload.safe_load(text)


def test_nesting_through_aliases_counts() -> None:
    deep = "[" * 40 + "1" + "]" * 40
    with pytest.raises(yamlload.YamlBoundsError, match="aliases"):
        yamlload.safe_load(
            f"a: &a {deep}\nb: [[[[[[[[[[[[[[[[[[[[[[[[[[[[*a]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n"
        )


def test_a_recursive_alias_is_refused() -> None:
    with pytest.raises(yaml.YAMLError):
        yamlload.safe_load("a: &a [*a]\n")


def test_ordinary_documents_load() -> None:
    text = (
        "base: &base {region: us-east-1, tags: [a, b]}\n"
        "one: *base\ntwo: *base\n"
        "regex: ^[a-z0-9][a-z0-9-]*$\n"
        "quoted: '" + "[" * 100 + "'\n"
        "# a comment [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n"
    )
    data = yamlload.safe_load(text)
    assert data["one"] == data["two"] == {"region": "us-east-1", "tags": ["a", "b"]}
    assert data["regex"] == "^[a-z0-9][a-z0-9-]*$" and data["quoted"] == "[" * 100


def test_the_tolerant_loader_is_bounded_too() -> None:
    with pytest.raises(yamlload.YamlBoundsError):
        yaml.load(BOMB, Loader=yamlload.tolerant_loader())
    assert yaml.load("p: !providers.SSH {host: h}\n", Loader=yamlload.tolerant_loader()) == {
        "p": {"host": "h"}
    }


def test_json_depth_and_garbage() -> None:
    with pytest.raises(FileProblem, match="nested"):
        loads_json("[" * 10_000, path="x.json")
    with pytest.raises(FileProblem, match="nested"):
        loads_json("[" * 100_000, path="state", max_depth=None)
    with pytest.raises(FileProblem, match="UTF-8"):
        loads_json(b"\xff\xfe", path="x.json")
    inside = "[" * 150  # brackets in a string are no nesting
    assert loads_json('{"a": "' + inside + '"}') == {"a": inside}
