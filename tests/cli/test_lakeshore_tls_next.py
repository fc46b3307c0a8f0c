"""The command the ``lakeshore`` CLI names next for each TLS failure
(``cli/lakeshore/common.py``'s ``tls_next_step``), without a server: the real
runs are in tests/controlplane/test_tls_serving.py."""

from __future__ import annotations

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


def test_an_unreadable_ca_names_the_ca_to_trust(monkeypatch: pytest.MonkeyPatch) -> None:
    step = _next(monkeypatch, ["claims", "lab"], "ca_unreadable", "https://10.0.0.5:7878")
    assert step.startswith("LAKESHORE_CA=") and step.endswith(" lakeshore claims lab")
