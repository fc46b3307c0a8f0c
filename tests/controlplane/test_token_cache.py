"""The token cache: entries end at spread-out times, never past the cache's life nor
the token's own; a full cache drops its expired and oldest entries, not everything;
and a miss (one query) answers exactly as the look-ups it replaces, with the same
refusals, on real databases (SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import time
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from dreamlake.controlplane.db import make_sessionmaker, utcnow
from dreamlake.controlplane.models import Namespace, Token
from dreamlake.controlplane.server.access.tokens import hash_token, new_token
from dreamlake.controlplane.server.deps import (
    Access,
    RefusedTokens,
    TokenCache,
    _reading,
    access_cached,
    access_of_digest,
    access_to,
    caller_of_digest,
)
from dreamlake.controlplane.server.errors import ApiError


def _ends(cache: TokenCache, key: Any) -> float:
    return cache._items[key][0]


def test_entries_end_spread_within_the_life_and_never_past_the_token() -> None:
    cache = TokenCache(ttl=60.0)
    lives = [cache.life() for _ in range(2000)]
    assert all(45.0 <= life <= 60.0 for life in lives)
    assert max(lives) - min(lives) > 10.0  # spread, not one moment for a whole fleet
    assert all(cache.life(5.0) <= 5.0 for _ in range(200))  # the token's own validity
    assert all(cache.life(500.0) <= 60.0 for _ in range(200))  # never past the cache's life
    before = time.monotonic()
    for i in range(500):
        cache.put(("k", i), i, 30.0 if i % 2 else None)
    after = time.monotonic()
    for i in range(500):
        ends = _ends(cache, ("k", i))
        if i % 2:  # the token ends in 30 s: so does its entry (45 s at least otherwise)
            assert before + 30.0 <= ends <= after + 30.0
        else:
            assert before + 45.0 <= ends <= after + 60.0
    cache.put("gone", 1, 0.0)  # a token at its expiry: not kept
    cache.put("past", 1, -3.0)
    assert cache.get("gone") is None and cache.get("past") is None


def test_a_full_cache_drops_expired_then_oldest_entries() -> None:
    cache = TokenCache(ttl=60.0, size=100)
    for i in range(100):
        cache.put(i, i)
    cache.put(100, 100)  # full: the oldest tenth goes, the rest stays
    assert [i for i in range(101) if cache.get(i) is not None] == list(range(10, 101))
    cache.put(10, "again")  # put again: the newest now
    for i in range(101, 111):
        cache.put(i, i)
    assert len(cache._items) <= 100
    assert cache.get(10) == "again"
    assert [i for i in range(111) if cache.get(i) is not None] == [10, *range(21, 111)]
    # expired entries go first: the live old ones are kept while there is room
    cache = TokenCache(ttl=60.0, size=100)
    for i in range(50):
        cache.put(("live", i), i)
    for i in range(50):
        cache.put(("dead", i), i, -1.0)
    cache.put("new", 1)
    assert all(cache.get(("live", i)) == i for i in range(50))
    assert len(cache._items) == 51


@pytest.fixture
def world(migrated_engine: Any) -> SimpleNamespace:
    """Namespaces (two in one org, one in another org, one in none) and tokens of
    every kind, in a real migrated database."""
    make = make_sessionmaker(migrated_engine)
    tokens: dict[str, str] = {}
    with make() as s:
        nss = {
            name: Namespace(name=name, org_id=org)
            for name, org in (("a1", "acme"), ("a2", "acme"), ("b1", "beta"), ("solo", None))
        }
        s.add_all(nss.values())
        s.flush()
        past, soon = utcnow() - timedelta(seconds=1), utcnow() + timedelta(seconds=20)

        def add(key: str, **kw: Any) -> None:
            tokens[key] = new_token()
            s.add(Token(token_hash=hash_token(tokens[key]), **kw))

        add("admin", admin=True)
        add("a1", namespace_id=nss["a1"].id)
        add("solo", namespace_id=nss["solo"].id, expires_at=soon)
        add(
            "daemon",
            namespace_id=nss["a1"].id,
            scope="daemon",
            provider_name="lab",
            instance_id="i-1",
            host="h",
        )
        add(
            "cert",
            namespace_id=nss["a1"].id,
            scope="daemon",
            provider_name="lab",
            instance_id="",
            expires_at=soon,
        )
        add("revoked", namespace_id=nss["a1"].id, revoked_at=utcnow())
        add("expired", namespace_id=nss["a1"].id, expires_at=past)
        s.commit()
        ids = {name: ns.id for name, ns in nss.items()}
    tokens["unknown"] = new_token()
    state = SimpleNamespace(
        engine=migrated_engine,  # a miss reads on a connection of it (no session)
        sessionmaker=make,
        token_cache=TokenCache(),
        refused_tokens=RefusedTokens(),
    )
    return SimpleNamespace(make=make, tokens=tokens, ids=ids, state=state, engine=migrated_engine)


UNKNOWN = (401, "unauthorized", "unknown or revoked token")
EXPIRED = (401, "unauthorized", "this token has expired; mint a new one")


def _not_valid(ns: str) -> tuple[int, str, str]:
    return (403, "forbidden", f"this token is not valid for namespace {ns!r}")


def _split(state: Any, digest: str, ns: str, session: Any) -> Access:
    return access_to(ns, caller_of_digest(state, digest, session), session)


def _answer(fn: Any, *args: Any) -> Any:
    try:
        access: Access = fn(*args)
    except ApiError as exc:
        return (exc.status, exc.error, exc.detail)
    ns = access.namespace
    assert isinstance(ns, Namespace) and ns.created_at is not None
    return (ns.id, ns.name, ns.org_id, access.namespace_ids, access.own)


def test_a_miss_answers_as_the_lookups_it_replaces(world: SimpleNamespace) -> None:
    """Every token against every namespace (and one that does not exist): one query
    (a token not yet cached), or the caller from the cache and then the namespace,
    give the same access or the same refusal, and the expected one."""
    ids, t = world.ids, world.tokens
    acme = tuple(sorted((ids["a1"], ids["a2"])))
    want_ok = {
        ("admin", "a1"): (ids["a1"], acme, True),
        ("admin", "a2"): (ids["a2"], acme, True),
        ("admin", "b1"): (ids["b1"], (ids["b1"],), True),
        ("admin", "solo"): (ids["solo"], (ids["solo"],), True),
        ("a1", "a1"): (ids["a1"], acme, True),
        ("a1", "a2"): (ids["a2"], acme, False),  # an org sibling: reads only
        ("solo", "solo"): (ids["solo"], (ids["solo"],), True),
        ("daemon", "a1"): (ids["a1"], acme, True),
        ("cert", "a1"): (ids["a1"], acme, True),
    }
    for key in t:
        for ns in ("a1", "a2", "b1", "solo", "nowhere"):
            digest = hash_token(t[key])
            if key in ("unknown", "revoked"):
                want: Any = UNKNOWN
            elif key == "expired":
                want = EXPIRED
            elif (key, ns) in want_ok:
                ns_id, org_ids, own = want_ok[(key, ns)]
                org = {"a1": "acme", "a2": "acme", "b1": "beta"}.get(ns)
                want = (ns_id, ns, org, org_ids, own)
            elif key == "admin":
                want = (404, "not_found", f"no namespace named {ns!r}")
            else:
                want = _not_valid(ns)
            world.state.token_cache.clear()
            world.state.refused_tokens = RefusedTokens()
            with world.make() as s:
                one = _answer(access_of_digest, world.state, digest, ns, s)
            world.state.token_cache.clear()
            world.state.refused_tokens = RefusedTokens()
            with _reading(world.state) as c:  # as a miss reads (PostgreSQL: autocommit)
                bare = _answer(access_of_digest, world.state, digest, ns, c)
            world.state.refused_tokens = RefusedTokens()
            with world.make() as s:  # the caller cached by now (when it is good)
                split = _answer(_split, world.state, digest, ns, s)
            assert bare == one, (key, ns)
            assert one == want, (key, ns, one)
            assert split == one, (key, ns)


def test_a_revoked_token_is_refused_once_the_caches_forget(world: SimpleNamespace) -> None:
    """Cached, a token answers from memory; revoked and forgotten (what every
    replica does on ``forget:tokens``), it is refused at the next request."""
    state = world.state
    for key in ("a1", "cert"):
        digest = hash_token(world.tokens[key])
        assert asyncio.run(access_cached(state, digest, "a1")).namespace.name == "a1"
        with world.make() as s:
            row = s.query(Token).filter_by(token_hash=digest).one()
            row.revoked_at = utcnow()
            s.commit()
        assert asyncio.run(access_cached(state, digest, "a1")).caller.scope  # cached
        state.token_cache.clear()  # forget:tokens
        with pytest.raises(ApiError) as err:
            asyncio.run(access_cached(state, digest, "a1"))
        assert (err.value.status, err.value.error, err.value.detail) == UNKNOWN


def test_a_cached_token_is_refused_from_its_expiry_on(world: SimpleNamespace) -> None:
    """An entry of a token ending soon lives no longer than the token; and whatever
    the cache holds, a token past its expiry gets the expired refusal."""
    state = world.state
    digest = hash_token(world.tokens["solo"])
    access = asyncio.run(access_cached(state, digest, "solo"))
    assert access.caller.expires_at is not None
    now = time.monotonic()
    assert _ends(state.token_cache, digest) <= now + 20.0
    assert _ends(state.token_cache, (digest, "solo")) <= now + 20.0
    ended = dataclasses.replace(access.caller, expires_at=utcnow() - timedelta(seconds=1))
    state.token_cache.put(digest, ended)  # as if cached before its expiry
    with world.make() as s, pytest.raises(ApiError) as err:
        access_of_digest(state, digest, "solo", s)
    assert (err.value.status, err.value.error, err.value.detail) == EXPIRED


def _sent(engine: Any, call: Any) -> tuple[Any, list[tuple[str, str]]]:
    """What ``call`` returns, and what it sends to the database as (kind, text):
    on PostgreSQL libpq's
    trace of the messages the client sends, where each ``Query`` (a simple-protocol
    statement) and each ``Sync`` (the end of a parameterized one) waits for the
    server once, a round trip; on SQLite every statement the engine runs."""
    import os
    import tempfile

    engine.dispose()  # the pool empty: the next checkout makes its only connection
    with engine.connect() as c:
        raw = c.connection.dbapi_connection
    if engine.dialect.name == "sqlite":
        ran: list[str] = []
        raw.set_trace_callback(ran.append)
        try:
            result = call()
        finally:
            raw.set_trace_callback(None)
        return result, [("statement", sql) for sql in ran]
    import psycopg

    if psycopg.pq.version() < 140000:
        pytest.skip("libpq's protocol trace needs libpq 14 or later")
    with tempfile.TemporaryFile("w+") as trace:
        raw.pgconn.trace(os.dup(trace.fileno()))  # the copy is closed by untrace
        raw.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            result = call()
        finally:
            raw.pgconn.untrace()
        trace.seek(0)
        lines = [line.rstrip("\n").split("\t") for line in trace if line.startswith("F\t")]
    return result, [
        (f[2], f[3].strip().strip('"') if len(f) > 3 else "") for f in lines if len(f) > 2
    ]


def _round_trips(sent: list[tuple[str, str]]) -> list[str]:
    """Each round trip of ``sent`` (PostgreSQL): the simple statement's text, or
    ``"statement"`` for a parameterized one."""
    return [
        text if kind == "Query" else "statement" for kind, text in sent if kind in ("Query", "Sync")
    ]


def test_a_miss_is_one_statement_and_one_round_trip(world: SimpleNamespace) -> None:
    """A miss (the server's path: ``access_cached``) sends its one SELECT and
    nothing else: on PostgreSQL one round trip (plus the pool's liveness check,
    when the engine pings on checkout), without the BEGIN and ROLLBACK a
    transaction costs; on SQLite the one SELECT, no BEGIN nor PRAGMA. Good,
    revoked, expired and unknown tokens get the answers they got before, and a
    refused token is refused from memory afterwards: nothing sent."""
    state, engine = world.state, world.engine
    pg = engine.dialect.name == "postgresql"
    ping = [";"] if pg and engine.pool._pre_ping else []  # SQLAlchemy's ping on psycopg

    def miss(key: str) -> Any:
        try:
            access = asyncio.run(access_cached(state, hash_token(world.tokens[key]), "a1"))
        except ApiError as exc:
            return (exc.status, exc.error, exc.detail)
        return access.namespace.name

    wants = {"a1": "a1", "daemon": "a1", "revoked": UNKNOWN, "expired": EXPIRED}
    wants["unknown"] = UNKNOWN
    for key, want in wants.items():
        state.token_cache.clear()
        got, sent = _sent(engine, functools.partial(miss, key))
        assert got == want, key
        if pg:
            assert _round_trips(sent) == [*ping, "statement"], (key, sent)
            assert any(k == "Parse" and "SELECT" in text for k, text in sent), sent
        else:
            assert len(sent) == 1 and sent[0][1].startswith("SELECT"), (key, sent)
        if isinstance(want, tuple):  # refused: from memory the next time
            assert _sent(engine, functools.partial(miss, key)) == (want, [])
    # the count sees a transaction's statements: the same read in one costs three
    state.token_cache.clear()
    state.refused_tokens = RefusedTokens()

    def in_a_transaction() -> None:
        with engine.connect() as c:
            access_of_digest(state, hash_token(world.tokens["a1"]), "a1", c)

    _, sent = _sent(engine, in_a_transaction)
    if pg:
        assert _round_trips(sent) == [*ping, "BEGIN", "statement", "ROLLBACK"], sent
