"""Two replicas starting at once over a fresh database each record the secret key's
id (``access/keys.py``): the one that finds the row written by the other between its
look and its write takes that row instead of failing its start (real SQLite, the
real migrations; the moment is made by reading the row as absent once)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dreamlake.controlplane.db import make_engine, make_sessionmaker, run_migrations, sqlite_url
from dreamlake.controlplane.models import ServerMeta
from dreamlake.controlplane.registry.crypto import SecretBox, generate_key
from dreamlake.controlplane.server.access import keys
from sqlalchemy.orm import Session


def test_a_key_id_recorded_by_another_replica_meanwhile_is_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = make_engine(sqlite_url(tmp_path), 2)
    run_migrations(engine)
    sessions = make_sessionmaker(engine)
    box = SecretBox(generate_key())
    with sessions() as first:  # the other replica: its check and its key id recorded
        keys.check_key(first, box, "a test key")
    real_get = Session.get
    hidden = []

    def get(self: Session, entity: Any, ident: Any, **kw: Any) -> Any:
        if entity is ServerMeta and ident == keys.CURRENT_KEY_ID and not hidden:
            hidden.append(ident)  # looked at before the other replica's commit
            return None
        return real_get(self, entity, ident, **kw)

    monkeypatch.setattr(Session, "get", get)
    with sessions() as second:
        keys.check_key(second, box, "a test key")  # starts, as the first did
    monkeypatch.undo()
    assert hidden == [keys.CURRENT_KEY_ID]
    with sessions() as s:
        row = s.get(ServerMeta, keys.CURRENT_KEY_ID)
        assert row is not None and row.value == box.key_id
    engine.dispose()
