"""What a resume reads of a daemon's certificate on its host and how a token is
handed there (engine/daemon/identity.py), on this machine's real shell. The mint
itself is held against a real control plane in tests/controlplane/test_connect_token.py,
and the whole resume over TLS in tests/engine/verbs/test_resume_cert_ended*.py."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

from dreamlake.engine.daemon.identity import CERT_FILES, TOKEN_FILE, hand, read_window
from dreamlake.engine.remote import LocalShell


def _holding(folder: Path, ends_in: float, *, pem: bool = True, life: float = 3600) -> None:
    folder.mkdir(exist_ok=True)
    now = time.time()
    ends = datetime.fromtimestamp(now + ends_in, UTC).isoformat().replace("+00:00", "Z")
    (folder / "daemon.json").write_text(
        json.dumps({"serial": "ab", "notAfter": ends, "issuedAt": now + ends_in - life})
    )
    if pem:
        (folder / "daemon.pem").write_text("certificate and key")


def test_no_certificate_is_nothing_to_replace(tmp_path: Path) -> None:
    """Plain HTTP or a proxy that terminates TLS: bearer tokens, no daemon.json."""
    assert read_window(LocalShell(), str(tmp_path)) is None
    (tmp_path / "daemon.json").write_text("not json")
    assert read_window(LocalShell(), str(tmp_path)) is None


def test_a_certificate_with_time_left_is_renewed_by_the_daemon(tmp_path: Path) -> None:
    _holding(tmp_path, 3000)
    window = read_window(LocalShell(), str(tmp_path))
    assert window is not None and window.renewable and not window.ended
    assert abs(window.now - time.time()) < 60  # the host's clock


def test_ended_too_soon_or_missing_its_file_needs_a_bootstrap(tmp_path: Path) -> None:
    shell = LocalShell()
    _holding(tmp_path / "ended", -60)
    ended = read_window(shell, str(tmp_path / "ended"))
    assert ended is not None and ended.ended and not ended.renewable
    _holding(tmp_path / "soon", 40)  # stops being presented at 10 s: before a first request
    soon = read_window(shell, str(tmp_path / "soon"))
    assert soon is not None and not soon.ended and not soon.renewable
    _holding(tmp_path / "gone", 3000, pem=False)
    gone = read_window(shell, str(tmp_path / "gone"))
    assert gone is not None and gone.ended and not gone.renewable


def test_handing_a_token_replaces_the_identity(tmp_path: Path) -> None:
    _holding(tmp_path, -60)
    (tmp_path / TOKEN_FILE).write_text("spent")
    hand(LocalShell(), str(tmp_path), "fresh")
    assert (tmp_path / TOKEN_FILE).read_text() == "fresh"
    assert (tmp_path / TOKEN_FILE).stat().st_mode & 0o777 == 0o600
    assert not any((tmp_path / f).exists() for f in CERT_FILES)


def test_a_resume_keeps_the_record_so_the_next_one_hands_again(tmp_path: Path) -> None:
    """The daemon did not spend the token resume handed (it did not start, or not
    within the token's minutes): the next resume still finds no certificate."""
    _holding(tmp_path, -60)
    hand(LocalShell(), str(tmp_path), "fresh", keep_record=True)
    assert not (tmp_path / "daemon.pem").exists()
    window = read_window(LocalShell(), str(tmp_path))
    assert window is not None and window.ended and not window.renewable
