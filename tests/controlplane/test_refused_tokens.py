"""A token found unknown, revoked or expired is refused from memory afterwards: a
client repeating a bad token costs one database look-up, not one per request.
Real databases (SQLite and PostgreSQL), the server's own dependency functions."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from dreamlake.controlplane.db import make_sessionmaker, utcnow
from dreamlake.controlplane.models import Token
from dreamlake.controlplane.server.access.tokens import hash_token, new_token
from dreamlake.controlplane.server.deps import TokenCache, caller_cached
from dreamlake.controlplane.server.errors import ApiError


def _state(engine: Any) -> tuple[Any, list[int]]:
    opened: list[int] = []
    make = make_sessionmaker(engine)

    def counting() -> Any:
        opened.append(1)
        return make()

    return SimpleNamespace(sessionmaker=counting, token_cache=TokenCache()), opened


def _refused(state: Any, digest: str) -> str:
    with pytest.raises(ApiError) as err:
        asyncio.run(caller_cached(state, digest))
    assert err.value.status == 401
    return str(err.value.detail)


def test_bad_tokens_cost_one_lookup(migrated_engine: Any) -> None:
    state, opened = _state(migrated_engine)
    revoked, expired, good = new_token(), new_token(), new_token()
    with make_sessionmaker(migrated_engine)() as session:
        session.add(Token(token_hash=hash_token(revoked), admin=True, revoked_at=utcnow()))
        session.add(
            Token(
                token_hash=hash_token(expired),
                admin=True,
                expires_at=utcnow() - timedelta(seconds=1),
            )
        )
        session.add(Token(token_hash=hash_token(good), admin=True))
        session.commit()
    for token, says in ((new_token(), "unknown"), (revoked, "revoked"), (expired, "expired")):
        before = len(opened)
        for _ in range(5):
            assert says in _refused(state, hash_token(token))
        assert len(opened) - before == 1, token
    assert asyncio.run(caller_cached(state, hash_token(good))).admin is True
