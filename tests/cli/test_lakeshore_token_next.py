"""The command the ``lakeshore`` CLI names next for a refused token
(``cli/lakeshore/token_next.py``), without a server: the real runs are in
tests/controlplane/test_lakeshore_token_refused.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from dreamlake.cli.lakeshore.common import error_doc
from dreamlake.cli.lakeshore.token_next import token_next_step


def _next(
    monkeypatch: pytest.MonkeyPatch,
    data: Path,
    status: int,
    detail: str,
    sent: str | None,
    namespace: str | None = None,
) -> str:
    monkeypatch.setattr("sys.argv", ["lakeshore", "work", "list", "--json"])
    monkeypatch.setenv("LAKESHORE_DATA_DIR", str(data))
    monkeypatch.delenv("LAKESHORE_NAMESPACE", raising=False)
    step = token_next_step(status, detail, namespace, sent)
    assert error_doc("…", "unauthorized", step)["nextAction"] is not None, step
    return step


def test_a_refused_admin_token_of_this_machine_names_a_restart(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Another file would be the same file: the server writes a new one at start."""
    (tmp_path / "admin.token").write_text("old\n")
    step = _next(monkeypatch, tmp_path, 401, "unknown or revoked token", "old")
    command, _, comment = step.partition("   # ")
    assert command == f"lakeshore serve --data-dir {tmp_path}"
    assert "new admin token" in comment
    # a token of another origin: this machine's admin token
    step = _next(monkeypatch, tmp_path, 401, "this token has expired; mint a new one", "x")
    assert step == f"lakeshore work list --json --token-file {tmp_path / 'admin.token'}"


def test_a_token_of_another_namespace_names_a_token_of_this_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    detail = "this token is not valid for namespace 'lab'"
    step = _next(monkeypatch, tmp_path, 403, detail, "x", namespace="lab")
    command, _, comment = step.partition("   # ")
    assert command == "lakeshore work list --json --token-file token"
    assert "namespace lab" in comment and "lakeshore tokens create --namespace lab" in comment
