"""``find_template`` reads one manifest where that gives ``all_templates()``'s answer,
and every manifest where it might not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dreamlake.engine.world import vendors
from dreamlake.engine.world.vendors import all_templates, find_template


def test_one_manifest_is_the_same_template_as_all_of_them() -> None:
    shipped = all_templates()
    assert len(shipped) >= 5
    for vendor, template in shipped.items():
        assert find_template(vendor) == template
        assert find_template(vendor).raw == template.raw  # type: ignore[union-attr]
    for unknown in ("nope", "../local", "local/..", ".", ""):
        assert find_template(unknown) is None


def test_user_templates_are_always_read_whole(
    own_templates: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A user template may take a shipped vendor's name from any folder: it wins.
    other = own_templates / "my-local"
    other.mkdir()
    manifest = json.loads((own_templates / "bare" / "TEMPLATE.json").read_text())
    (other / "TEMPLATE.json").write_text(json.dumps({**manifest, "vendor": "local"}))
    vendors._load.cache_clear()
    try:
        got = find_template("local")
        assert got is not None and got.source == other and got.kind == "test"
        assert find_template("bare") == all_templates()["bare"]
    finally:
        vendors._load.cache_clear()
