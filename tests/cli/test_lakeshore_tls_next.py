"""The command the ``lakeshore`` CLI names next for each TLS failure
(``cli/lakeshore/common.py``'s ``tls_next_step``), without a server: the real
runs are in tests/controlplane/test_tls_serving.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from dreamlake.cli.lakeshore.common import error_doc, tls_next_step
from dreamlake.controlplane.client import Untrusted


def _next(monkeypatch: pytest.MonkeyPatch, argv: list[str], reason: str, url: str) -> str:
    monkeypatch.setattr("sys.argv", ["lakeshore", *argv])
    step = tls_next_step(Untrusted("…", url, "advice", reason))
    assert error_doc("…", "lakeshore_untrusted", step)["nextAction"] is not None, step
    return step


def test_tls_to_a_plain_server_off_loopback_names_the_server_side_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    step = _next(monkeypatch, ["claims", "lab"], "not_tls", "https://10.0.0.5:7878")
    assert step.startswith(
        "lakeshore serve --host 10.0.0.5   # on the server, without --insecure-http"
    )
    assert "http://10.0.0.5:7878" in step


def test_the_url_is_fixed_where_it_was_given(monkeypatch: pytest.MonkeyPatch) -> None:
    plain = "http://10.0.0.5:7878"
    assert _next(monkeypatch, ["claims", "lab", "--server", plain], "plain_to_tls", plain) == (
        "lakeshore claims lab --server https://10.0.0.5:7878"
    )
    assert _next(monkeypatch, [f"--server={plain}", "claims", "x"], "plain_to_tls", plain) == (
        "lakeshore --server=https://10.0.0.5:7878 claims x"
    )
    assert _next(monkeypatch, ["claims", "lab"], "plain_to_tls", plain) == (
        "LAKESHORE_URL=https://10.0.0.5:7878 lakeshore claims lab"
    )
    loopback = "https://127.0.0.1:7878"
    assert _next(monkeypatch, ["claims", "lab"], "not_tls", loopback) == (
        "LAKESHORE_URL=http://127.0.0.1:7878 lakeshore claims lab"
    )


def test_an_unreadable_ca_names_the_ca_to_trust(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """On the server's machine: its data dir's ca.crt."""
    (tmp_path / "tls").mkdir()
    (tmp_path / "tls" / "ca.crt").write_text("a CA certificate\n")
    monkeypatch.setenv("LAKESHORE_DATA_DIR", str(tmp_path))
    step = _next(monkeypatch, ["claims", "lab"], "ca_unreadable", "https://10.0.0.5:7878")
    assert step == f"LAKESHORE_CA={tmp_path / 'tls' / 'ca.crt'} lakeshore claims lab"


def test_without_the_ca_here_the_command_names_a_copy(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Off the server's machine (no data dir holding its CA) the command is still one
    to run, with the file to copy said beside it: no placeholder to quote."""
    monkeypatch.setenv("LAKESHORE_DATA_DIR", str(tmp_path))
    step = _next(monkeypatch, ["claims", "lab", "--json"], "unknown_ca", "https://10.0.0.5:7878")
    command, _, comment = step.partition("   # ")
    assert command == "LAKESHORE_CA=ca.crt lakeshore claims lab --json"
    assert "<data dir>/tls/ca.crt on the server" in comment and "'" not in step
