"""When the daemon renews its client certificate and when it stops presenting it
(controlplane/nymph/certwindow.py), read through the daemon's own Credentials: a
certificate of the shortest life the server issues (60 s) is renewed with itself
before it stops being presented, and a resume knows when a daemon started again
could no longer renew it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from dreamlake.controlplane.nymph import certwindow
from dreamlake.controlplane.nymph.credentials import Credentials

T0 = 1_800_000_000.0


def _held(folder: Path, life: float) -> Credentials:
    """Credentials holding a certificate issued at T0 that lives ``life`` seconds."""
    folder.mkdir()
    (folder / "daemon.pem").write_text("certificate and key")
    ends = datetime.fromtimestamp(T0 + life, UTC).isoformat().replace("+00:00", "Z")
    (folder / "daemon.json").write_text(json.dumps({"notAfter": ends, "issuedAt": T0}))
    return Credentials(folder, "default", "lab", lambda: "spent")


def test_the_shortest_life_is_renewed_before_it_stops_being_presented(tmp_path: Path) -> None:
    creds = _held(tmp_path / "c", 60)
    assert creds.valid(T0 + 35) and not creds.due(T0 + 35)
    # renewal due at 40 s while it is still presented (until 50 s): asked for with it
    assert creds.valid(T0 + 41) and creds.due(T0 + 41)
    assert not creds.valid(T0 + 51) and creds.due(T0 + 51)


def test_a_day_long_certificate_keeps_its_thirty_seconds(tmp_path: Path) -> None:
    day = 24 * 3600.0
    creds = _held(tmp_path / "c", day)
    assert certwindow.margin(T0, T0 + day) == certwindow.MARGIN_SECONDS
    assert not creds.due(T0 + day / 2)
    assert creds.due(T0 + 2 * day / 3) and creds.valid(T0 + 2 * day / 3)
    assert creds.valid(T0 + day - 31) and not creds.valid(T0 + day - 29)


@pytest.mark.parametrize(
    ("now", "ends_first"),
    [
        (T0 + 100, False),  # 3,500 s left: the daemon started now renews it itself
        (T0 + 3600 - 30 - certwindow.START_SECONDS + 1, True),  # stops being presented too soon
        (T0 + 4000, True),  # ended while it was stopped
    ],
)
def test_a_daemon_started_again_could_or_could_not_renew_it(now: float, ends_first: bool) -> None:
    assert certwindow.ends_before_start(T0, T0 + 3600, now) is ends_first
