"""The user cache's one rule for remembering an answer (``engine/settings/usercache.py``), and
the ``.dreamrc`` section ``status`` reads through it (``lakeshore.dreamrc_section``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dreamlake.engine.settings import usercache
from dreamlake.engine.settings.dreamrc import DreamrcError
from dreamlake.engine.world import lakeshore


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DREAMLAKE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


class Count:
    def __init__(self, value: object) -> None:
        self.value, self.calls = value, 0

    def __call__(self) -> object:
        self.calls += 1
        return self.value


def test_an_answer_is_kept_per_key_and_fingerprint(cache_dir: Path) -> None:
    f = Count({"a": [1, 2]})
    assert usercache.remembered("k", "one", [1], f) == {"a": [1, 2]}
    assert usercache.remembered("k", "one", [1], f) == {"a": [1, 2]} and f.calls == 1
    usercache.remembered("k", "one", [2], f)  # another fingerprint: computed again
    usercache.remembered("k", "two", [2], f)  # another key
    assert f.calls == 3 and len(list((cache_dir / "k").iterdir())) == 2
    usercache.remembered("k", "three", [1], f, keep=False)
    usercache.remembered("k", "three", [1], f, keep=False)
    assert f.calls == 5 and len(list((cache_dir / "k").iterdir())) == 2


def test_broken_entries_failures_and_off(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = Count(3)
    usercache.remembered("k", "one", [1], f)
    (entry,) = (cache_dir / "k").iterdir()
    entry.write_text("{nope")
    assert usercache.remembered("k", "one", [1], f) == 3 and f.calls == 2
    assert json.loads(entry.read_text())["value"] == 3

    def boom() -> object:
        raise ValueError("no answer")

    with pytest.raises(ValueError):
        usercache.remembered("k", "new", [1], boom)
    assert len(list((cache_dir / "k").iterdir())) == 1
    monkeypatch.setenv("DREAMLAKE_CACHE_DIR", "off")
    usercache.remembered("k", "one", [1], f)
    usercache.remembered("k", "one", [1], f)
    assert f.calls == 4


def test_stats_and_the_racy_window(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "f"
    f.write_text("x")
    stats = usercache.file_stats(f)
    assert stats is not None and stats[0] == 1 and usercache.file_stats(tmp_path / "no") is None
    assert not usercache.settled([stats])  # changed just now
    monkeypatch.setattr(usercache, "RACY_SECONDS", 0.0)
    assert usercache.settled([stats])
    assert usercache.listing(tmp_path) == [["f", *stats]]
    assert usercache.listing(tmp_path / "no") is None


@pytest.fixture
def rc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache_dir: Path) -> Path:
    for k in ("LAKESHORE_URL", "LAKESHORE_NAMESPACE", "DREAMRC"):
        monkeypatch.delenv(k, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(usercache, "RACY_SECONDS", 0.0)
    proj = tmp_path / "proj"
    proj.mkdir()
    return proj / ".dreamrc"


def test_the_dreamrc_section_is_read_once_per_version_of_the_file(rc: Path) -> None:
    rc.write_text("lakeshore:\n  url: http://127.0.0.1:7001\n  token_file: ~/tok\n")
    section, path = lakeshore.dreamrc_section(rc.parent)
    assert path == rc and section["url"] == "http://127.0.0.1:7001"
    assert section["token_file"] == str(Path(os.environ["HOME"]) / "tok")
    assert lakeshore.dreamrc_section(rc.parent) == (section, rc)  # remembered

    rc.write_text("lakeshore:\n  url: http://127.0.0.1:7002\n  token_file: ~/tok\n")
    assert lakeshore.dreamrc_section(rc.parent)[0]["url"] == "http://127.0.0.1:7002"
    rc.write_text("lakeshore:\n  url: [broken\n")
    for _ in range(2):  # an error every time, never an older answer
        with pytest.raises(DreamrcError):
            lakeshore.dreamrc_section(rc.parent)


def test_a_remembered_section_costs_status_no_yaml(rc: Path, tmp_path: Path) -> None:
    rc.write_text("lakeshore:\n  url: http://127.0.0.1:7003\n  namespace: team\n")
    past = time.time() - 60
    os.utime(rc, (past, past))
    code = (
        "import sys; from dreamlake.engine.settings import usercache; usercache.RACY_SECONDS = 0; "
        "from dreamlake.engine.world.lakeshore import resolve_control_plane; "
        f"cp = resolve_control_plane({str(rc.parent)!r}); "
        "print(cp.url, cp.namespace, 'yaml' in sys.modules)"
    )
    runs = [
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True) for _ in "ab"
    ]
    assert runs[0].stdout.split() == ["http://127.0.0.1:7003", "team", "True"], runs[0].stderr
    assert runs[1].stdout.split() == ["http://127.0.0.1:7003", "team", "False"], runs[1].stderr


def test_code_stats_name_files_and_folders(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.txt").write_text("not code\n")
    got = usercache.code_stats(tmp_path, tmp_path / "a.py", tmp_path / "gone.py")
    st = usercache.file_stats(tmp_path / "a.py")
    assert st is not None
    row = [str(tmp_path / "a.py"), st[0], st[2]]
    assert got == [row, row, [str(tmp_path / "gone.py"), None]]
