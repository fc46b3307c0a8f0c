"""``lakeshore tokens list``'s prose line says each token's scope: a bootstrap or
metrics token never reads as a namespace token (which may do anything in it)."""

from __future__ import annotations

from dreamlake.cli.lakeshore.fleet import _token_line

ROW = {"id": 8, "namespace": "default", "admin": False, "label": None,
       "createdAt": "2026-12-05T09:34:19Z", "expiresAt": None, "revokedAt": None}  # fmt: skip


def test_each_scope_is_said() -> None:
    assert "  namespace default  -  " in _token_line({**ROW, "scope": "namespace"})
    boot = _token_line({**ROW, "scope": "bootstrap", "provider": "lab", "instance": "i-1"})
    assert "  namespace default bootstrap of lab instance i-1  -  " in boot
    daemon = _token_line({**ROW, "scope": "daemon", "provider": "lab", "host": "box"})
    assert "  namespace default daemon of lab on box  -  " in daemon
    assert "  namespace default metrics  -  " in _token_line({**ROW, "scope": "metrics"})
    assert _token_line({**ROW, "admin": True, "scope": "namespace"}).startswith("    8  admin  -")
