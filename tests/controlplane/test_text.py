"""Text UTF-8 can encode, found and marked at any depth (pure functions)."""

from __future__ import annotations

from dreamlake.controlplane.text import encodable, escaped, find_unencodable, mark_unencodable


def test_encodable_and_escaped() -> None:
    assert encodable("café ✓") and not encodable("a\udcffb")
    assert escaped("a\udcffb") == "a\\udcffb" and escaped("café") == "café"


def test_find_names_the_first_bad_value_or_key_at_any_depth() -> None:
    assert find_unencodable({"a": [1, "ok", {"b": "fine"}]}) is None
    path, what = find_unencodable({"kwargs": {"k": ["ok", "h\udcff"]}})  # type: ignore[misc]
    assert path == ["kwargs", "k", "1"] and "is not valid Unicode" in what
    path, what = find_unencodable({"kwargs": {"h\udcff": "a"}})  # type: ignore[misc]
    assert path == ["kwargs", "h\\udcff"] and "key" in what
    assert find_unencodable("\ud800") == ([], "the text '\\\\ud800' is not valid Unicode")


def test_mark_escapes_every_bad_string_and_lists_the_places() -> None:
    clean, places = mark_unencodable(
        {"kwargs": {"host": "a\udcffb", "k\udcfe": "v", "list": ["x", "\udc80"], "n": 1}}
    )
    assert clean == {
        "kwargs": {"host": "a\\udcffb", "k\\udcfe": "v", "list": ["x", "\\udc80"], "n": 1}
    }
    assert sorted(places) == ["kwargs.host", "kwargs.k\\udcfe", "kwargs.list[1]"]
    assert mark_unencodable({"a": "fine"}) == ({"a": "fine"}, [])
