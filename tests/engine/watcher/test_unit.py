"""The systemd unit ``watch --install`` hands the supervisor ladder where systemd runs
(this machine has none, so the unit is checked as a value, as the daemon's is):
it runs the root's ``.dream/watch.sh`` from the root, restarts it, and is named
for the root, apart from any daemon's unit."""

from __future__ import annotations

from pathlib import Path

from dreamlake.engine.daemon import start as supervise
from dreamlake.engine.watcher.install import watch_key, watcher_spec
from dreamlake.engine.world.paths import Root


def _root(path: Path) -> Root:
    return Root(path=path, reason="--dream-dir")


def test_the_user_unit_runs_the_roots_watch_script(tmp_path: Path) -> None:
    root = _root(tmp_path / "proj")
    spec = watcher_spec(root, "u")
    text = supervise.systemd_unit(spec, system=False)
    assert f"ExecStart={root.dream / 'watch.sh'}" in text
    assert f"WorkingDirectory={root.path}" in text
    assert "Restart=always" in text and "WantedBy=default.target" in text
    assert f"Description=dreamlake provider watch on {root.path}" in text
    assert spec.unit_name == f"dreamlake-{watch_key(root)}.service"
    assert not spec.unit_name.startswith("nymph-")  # never a daemon's unit


def test_the_system_unit_runs_as_the_user(tmp_path: Path) -> None:
    text = supervise.systemd_unit(watcher_spec(_root(tmp_path / "proj"), "u"), system=True)
    assert "User=u" in text and "WantedBy=multi-user.target" in text


def test_two_roots_get_two_units(tmp_path: Path) -> None:
    a = watcher_spec(_root(tmp_path / "a"), "u").unit_name
    b = watcher_spec(_root(tmp_path / "b"), "u").unit_name
    assert a != b
