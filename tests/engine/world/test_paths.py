"""Where .dream/ goes: beside the nearest .dreamrc walking up, else cwd; --dream-dir wins."""

from __future__ import annotations

from pathlib import Path

import pytest
from dreamlake.engine.contract.errors import UsageError
from dreamlake.engine.world.paths import check_name, find_root


def test_beside_nearest_dreamrc(tmp_path: Path) -> None:
    (tmp_path / ".dreamrc").write_text("{}\n")
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    root = find_root(cwd=deep)
    assert root.path == tmp_path and root.reason == ".dreamrc"
    assert root.provider_dir("x") == tmp_path / ".dream" / "providers" / "x"


def test_nearest_wins_over_farther(tmp_path: Path) -> None:
    (tmp_path / ".dreamrc").write_text("{}\n")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / ".dreamrc").write_text("{}\n")
    assert find_root(cwd=tmp_path / "a").path == tmp_path / "a"


def test_cwd_without_dreamrc(tmp_path: Path) -> None:
    root = find_root(cwd=tmp_path)
    assert root.path == tmp_path and root.reason == "cwd"


def test_dream_dir_overrides(tmp_path: Path) -> None:
    (tmp_path / ".dreamrc").write_text("{}\n")
    other = tmp_path / "elsewhere"
    assert find_root(other, cwd=tmp_path).path == other
    assert find_root(other / ".dream", cwd=tmp_path).path == other
    assert find_root(other, cwd=tmp_path).reason == "--dream-dir"


@pytest.mark.parametrize("good", ["a", "aws-demo", "0x", "lab-box-2"])
def test_good_names(good: str) -> None:
    assert check_name(good) == good


@pytest.mark.parametrize("bad", ["", "-a", "A", "a_b", "a.b", "a/b", "..", "a b"])
def test_bad_names(bad: str) -> None:
    with pytest.raises(UsageError):
        check_name(bad)


def test_nearest_dreamrc_order(tmp_path: Path) -> None:
    from dreamlake.engine.world.paths import nearest_dreamrc

    home = tmp_path / "home"
    home.mkdir()
    (home / ".dreamrc").write_text("{}\n")
    proj = tmp_path / "proj" / "deep"
    proj.mkdir(parents=True)
    env = {"HOME": str(home)}
    assert nearest_dreamrc(proj, env) == home / ".dreamrc"  # nothing above: home
    (tmp_path / "proj" / ".dreamrc").write_text("{}\n")
    assert nearest_dreamrc(proj, env) == tmp_path / "proj" / ".dreamrc"  # nearest above
    assert nearest_dreamrc(proj, env, walk=False) == home / ".dreamrc"
    named = tmp_path / "named.yaml"
    named.write_text("{}\n")
    assert nearest_dreamrc(proj, {**env, "DREAMRC": str(named)}) == named  # $DREAMRC first
    missing = {**env, "DREAMRC": str(tmp_path / "nope")}
    assert nearest_dreamrc(proj, missing) is None  # names no file: nothing, not a fallback
