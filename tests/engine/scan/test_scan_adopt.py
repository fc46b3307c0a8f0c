"""The adopt.json decision scan of the ssh vendor."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from dreamlake.engine.contract.errors import DreamlakeError
from dreamlake.engine.contract.result import EditThenContinue
from dreamlake.engine.scan.adopt import scan_adopt
from dreamlake.engine.world.paths import ProviderPaths
from dreamlake.engine.world.vendors import get_template

TEMPLATES = Path(__file__).resolve().parents[3] / "templates"


@pytest.fixture
def paths(tmp_path: Path) -> ProviderPaths:
    d = tmp_path / ".dream" / "providers" / "lab"
    shutil.copytree(TEMPLATES / "ssh", d, ignore=shutil.ignore_patterns("TEMPLATE.json"))
    return ProviderPaths(d)


def write(paths: ProviderPaths, data: dict[str, object]) -> None:
    paths.adopt_json.write_text(json.dumps(data, indent=2) + "\n")


def test_shipped_adopt_blocks_on_unset_keys(paths: ProviderPaths) -> None:
    got = scan_adopt(paths, get_template("ssh"))
    assert [(b.key, b.reason) for b in got] == [
        ("host", "unset"),
        ("user", "unset"),
        ("queues", "unset"),
    ]
    text = paths.adopt_json.read_text().splitlines()
    for b in got:
        assert b.file == str(paths.adopt_json.absolute())
        assert b.line is not None and f'"{b.key}"' in text[b.line - 1]
        assert b.why


def test_resolved_adopt_is_clean(paths: ProviderPaths) -> None:
    write(paths, {"host": "127.0.0.1", "user": "ops", "port": 2222, "queues": ["default"]})
    assert scan_adopt(paths, get_template("ssh")) == []


def test_invalid_values_have_messages(paths: ProviderPaths) -> None:
    write(paths, {"host": "  ", "user": "ops", "port": 0, "queues": ["Bad Queue"]})
    got = {b.key: b for b in scan_adopt(paths, get_template("ssh"))}
    assert {k: b.reason for k, b in got.items()} == {
        "host": "invalid",
        "port": "invalid",
        "queues": "invalid",
    }
    assert got["host"].line == 2 and got["port"].line == 4
    assert "1 to 65535" in (got["port"].message or "")
    assert "non-empty" in (got["host"].message or "")


@pytest.mark.parametrize("port", ["22", True, 65536, 22.5])
def test_bad_ports(paths: ProviderPaths, port: object) -> None:
    write(paths, {"host": "h", "user": "u", "port": port, "queues": ["q"]})
    (b,) = scan_adopt(paths, get_template("ssh"))
    assert (b.key, b.reason) == ("port", "invalid")


def test_absent_key_is_unset_without_line(paths: ProviderPaths) -> None:
    write(paths, {"host": "h", "port": 22, "queues": ["q"]})
    (b,) = scan_adopt(paths, get_template("ssh"))
    assert (b.key, b.reason, b.line) == ("user", "unset", None)


def test_placeholder_marker(paths: ProviderPaths) -> None:
    write(paths, {"host": "CHANGE-ME.example", "user": "u", "port": 22, "queues": ["q"]})
    (b,) = scan_adopt(paths, get_template("ssh"))
    assert (b.key, b.reason) == ("host", "placeholder")


def test_not_json_raises_with_line(paths: ProviderPaths) -> None:
    paths.adopt_json.write_text('{\n  "host": "h",\n  "user": \n}\n')
    with pytest.raises(DreamlakeError) as info:
        scan_adopt(paths, get_template("ssh"))
    assert info.value.kind == "adopt_syntax"
    assert f"{paths.adopt_json}:4" in info.value.message
    assert info.value.next_action == EditThenContinue(
        file=str(paths.adopt_json), command="dreamlake provider create -n lab --continue"
    )


def test_a_key_given_twice_is_refused(paths: ProviderPaths) -> None:
    paths.adopt_json.write_text('{\n  "host": "a",\n  "user": "u",\n  "host": "b"\n}\n')
    with pytest.raises(DreamlakeError) as info:
        scan_adopt(paths, get_template("ssh"))
    assert info.value.kind == "adopt_syntax"
    assert f"{paths.adopt_json}:4" in info.value.message
