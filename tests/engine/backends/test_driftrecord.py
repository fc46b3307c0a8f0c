"""The drift record: written atomically, read back, and dropped (ignored and removed)
when the state it was taken against is not the current one."""

from __future__ import annotations

from pathlib import Path

import pytest
from dreamlake.engine.backends.driftrecord import DriftRecord, live_drift, read_drift, write_drift
from dreamlake.engine.contract.result import DriftedResource

SEEN = "2026-01-01T00:00:00+00:00"
STATE = {"serial": 3, "lineage": "abc"}


def _record() -> DriftRecord:
    res = DriftedResource(address="a.b", action="update", attributes=["tags.x"], seen_at=SEEN)
    return DriftRecord(backend="terraform", seen_at=SEEN, state=STATE, resources=(res,))


def test_round_trip_and_live_against_its_state(tmp_path: Path) -> None:
    path = tmp_path / "tfplan.drift.json"
    written = write_drift(path, _record())
    assert written.path == str(path)
    back = read_drift(path)
    assert back is not None and back.resources == _record().resources and back.drifted
    live = live_drift(path, dict(STATE))
    assert live is not None and live.path == str(path) and path.exists()


def test_a_record_of_another_state_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "tfplan.drift.json"
    write_drift(path, _record())
    assert live_drift(path, {"serial": 4, "lineage": "abc"}) is None
    assert not path.exists()  # removed, not only ignored


def test_garbage_is_dropped_and_absence_is_none(tmp_path: Path) -> None:
    path = tmp_path / "tfplan.drift.json"
    assert live_drift(path, STATE) is None
    path.write_text("{not json")
    assert live_drift(path, STATE) is None and not path.exists()


def test_a_record_that_cannot_be_removed_is_ignored_all_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder status may not write (a read-only checkout; refused here by a stand-in
    for ``unlink``, since this machine's root may write anywhere): still no drift."""
    path = tmp_path / "tfplan.drift.json"
    write_drift(path, _record())

    def refused(self: Path, missing_ok: bool = False) -> None:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "unlink", refused)
    assert live_drift(path, {"serial": 9, "lineage": "abc"}) is None
    assert path.exists()
