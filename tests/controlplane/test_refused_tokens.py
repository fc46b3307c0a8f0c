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
from dreamlake.controlplane.server.deps import RefusedTokens, TokenCache, caller_cached
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


def test_a_full_memory_drops_its_oldest_of_a_kind() -> None:
    """Full, it drops the oldest digest of the kind it adds (unknown, or known:
    revoked or expired), one at a time, and keeps every other."""
    refused = RefusedTokens(size=3)
    no, gone = ApiError(401, "unauthorized", "unknown"), ApiError(401, "unauthorized", "revoked")
    refused.add("revoked-1", gone, known=True)
    for i in range(5):
        refused.add(f"made-up-{i}", no)
    assert refused.held() == 4
    for digest in ("revoked-1", "made-up-2", "made-up-3", "made-up-4"):
        with pytest.raises(ApiError):
            refused.check(digest)
    refused.check("made-up-0")  # the oldest made-up ones, forgotten
    refused.check("made-up-1")
    refused.add("made-up-2", no)  # added again: the newest of its kind
    refused.add("made-up-5", no)
    refused.check("made-up-3")
    with pytest.raises(ApiError):
        refused.check("made-up-2")


def test_a_flood_of_made_up_tokens_keeps_the_revoked_ones(migrated_engine: Any) -> None:
    """Learned revoked and expired tokens stay refused from memory (no look-up)
    through a flood of made-up tokens larger than the memory; of the flood, the
    newest stay remembered and the oldest cost one look-up again."""
    state, opened = _state(migrated_engine)
    state.refused_tokens = RefusedTokens(size=20)
    revoked, expired = new_token(), new_token()
    with make_sessionmaker(migrated_engine)() as session:
        session.add(Token(token_hash=hash_token(revoked), admin=True, revoked_at=utcnow()))
        past = utcnow() - timedelta(seconds=1)
        session.add(Token(token_hash=hash_token(expired), admin=True, expires_at=past))
        session.commit()
    for token in (revoked, expired):
        _refused(state, hash_token(token))
    flood = [new_token() for _ in range(60)]
    for token in flood:
        _refused(state, hash_token(token))
    before = len(opened)
    assert "revoked" in _refused(state, hash_token(revoked))
    assert "expired" in _refused(state, hash_token(expired))
    for token in flood[-20:]:
        _refused(state, hash_token(token))
    assert len(opened) == before  # all from memory
    _refused(state, hash_token(flood[0]))
    assert len(opened) == before + 1
    assert state.refused_tokens.held() <= 2 * 20
