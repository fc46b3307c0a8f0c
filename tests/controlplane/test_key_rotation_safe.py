"""Key rotation never leaves a secret unreadable, and a refused replica leaves
nothing behind. Real ``lakeshore serve`` processes and the real ``lakeshore keys
rotate`` on SQLite and a throwaway PostgreSQL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lakeshore_fixtures import ServerProc, clean_env, free_port, lakeshore_argv


def _put_secret(s: ServerProc, name: str, value: str) -> None:
    req = urllib.request.Request(
        f"{s.url}/api/namespaces/default/secrets/{name}",
        data=json.dumps({"value": value}).encode(),
        method="PUT",
        headers={"Authorization": f"Bearer {s.admin_token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.status in (200, 201)


def _put_status(s: ServerProc, name: str, value: str) -> tuple[int, dict[str, Any]]:
    try:
        _put_secret(s, name, value)
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())
    return 200, {}


def _readable(url: str, key: bytes) -> dict[str, str]:
    """Every secret decrypted with ``key``, in-process (raises when one is not)."""
    from dreamlake.controlplane.db import make_engine
    from dreamlake.controlplane.models import Namespace
    from dreamlake.controlplane.registry.crypto import SecretBox
    from dreamlake.controlplane.registry.models import Secret
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    engine = make_engine(url)
    box = SecretBox(key)
    try:
        with Session(engine) as session:
            names = {i: n for i, n in session.execute(select(Namespace.id, Namespace.name))}
            return {
                row.name: box.decrypt(
                    row.ciphertext, namespace=names[row.namespace_id], name=row.name
                )
                for row in session.scalars(select(Secret))
            }
    finally:
        engine.dispose()


def _holders(url: str) -> list[Any]:
    """The servers that hold the database, as the rotation sees them."""
    from dreamlake.controlplane.db import make_engine
    from dreamlake.controlplane.server.fleet import presence
    from sqlalchemy.orm import Session

    engine = make_engine(url)
    try:
        with Session(engine) as session:
            return presence.holders(session)
    finally:
        engine.dispose()


def _age_presence(url: str, seconds: float) -> None:
    """Every server's presence row made ``seconds`` older (its last refresh moved back)."""
    import datetime as dt

    from dreamlake.controlplane.db import make_engine
    from dreamlake.controlplane.models import ServerMeta
    from dreamlake.controlplane.server.fleet.presence import PREFIX
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    engine = make_engine(url)
    try:
        with Session(engine) as session, session.begin():
            rows = list(
                session.scalars(select(ServerMeta).where(ServerMeta.key.startswith(PREFIX)))
            )
            assert rows
            for row in rows:
                doc = json.loads(row.value)
                seen = dt.datetime.fromisoformat(doc["seen"]) - dt.timedelta(seconds=seconds)
                row.value = json.dumps(doc | {"seen": seen.isoformat()})
    finally:
        engine.dispose()


def _rotate(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*lakeshore_argv(), "keys", "rotate", *args],
        env=clean_env(**env),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    """Where the database is and how a server and ``keys rotate`` find the key."""
    from cryptography.fernet import Fernet

    data = tmp_path / "data"
    if request.param == "sqlite":
        return {"data": data, "db": None, "url": f"sqlite:///{data / 'lakeshore.db'}"}
    request.applymarker(pytest.mark.needs_postgres)
    url = request.getfixturevalue("postgres").new_database()
    key_file = tmp_path / "pg.key"
    key_file.write_bytes(Fernet.generate_key() + b"\n")
    key_file.chmod(0o600)
    return {"data": data, "db": url, "url": url, "key_file": key_file}


def _key_env(b: dict[str, Any]) -> dict[str, str]:
    """The key from a file (an empty LAKESHORE_SECRET_KEY: the fixtures' shared key
    would otherwise win), so the rotation can write the new key where it came from."""
    if "key_file" not in b:
        return {}
    return {"LAKESHORE_SECRET_KEY": "", "LAKESHORE_SECRET_KEY_FILE": str(b["key_file"])}


def _key(b: dict[str, Any]) -> bytes:
    path = b.get("key_file") or b["data"] / "secret.key"
    return Path(path).read_bytes().strip()


def test_rotation_is_refused_while_a_server_holds_the_database(
    backend: dict[str, Any], start_server: Callable[..., ServerProc]
) -> None:
    """A server running + rotate + a secret written + restart: every secret reads. A
    stopped server withdraws its presence: rotation is not refused for it.

    Then a server paused through a rotation loses no secret: SIGSTOP a real server past
    the heartbeat bound (the rotation refuses while it still counts as holding the
    database, then no longer counts it), rotate, SIGCONT: its next secret write is
    refused (503, the key reloaded) instead of being written with the old key, the
    retry writes it with the new key, and after a restart every secret reads."""
    from dreamlake.controlplane.registry.crypto import key_id
    from dreamlake.controlplane.server.fleet import presence

    b = backend
    env = _key_env(b)
    s = start_server(data_dir=b["data"], db_url=b["db"], env=env)
    assert [h.pid for h in _holders(b["url"])] == [s.proc.pid]  # type: ignore[union-attr]
    _put_secret(s, "before", "one")
    old = _key(b)
    args = ["--data-dir", str(b["data"])] + (["--db", b["db"]] if b["db"] else [])
    refused = _rotate(env, *args)
    assert refused.returncode != 0
    assert "a running server holds this database" in refused.stderr, refused.stderr
    assert f"pid {s.proc.pid}" in refused.stderr  # type: ignore[union-attr]
    assert "nothing changed" in refused.stderr
    assert _key(b) == old
    _put_secret(s, "after", "two")  # written by the server that still holds the old key
    s.stop()
    assert _holders(b["url"]) == []  # a stopped server is not a holder
    s = start_server(data_dir=b["data"], db_url=b["db"], env=env)  # a restart reads them
    assert _readable(b["url"], _key(b)) == {"before": "one", "after": "two"}
    s.stop()
    # with every server stopped the rotation goes through, and a restart on the new key
    # reads every secret (the new key is where the old one came from)
    done = _rotate(env, *args)
    assert done.returncode == 0, done.stderr
    assert "re-encrypted 2 secret" in done.stdout
    assert _key(b) != old
    s = start_server(data_dir=b["data"], db_url=b["db"], env=env)
    _put_secret(s, "later", "three")
    three = {"before": "one", "after": "two", "later": "three"}
    assert _readable(b["url"], _key(b)) == three

    # the server on the new key is paused through the next rotation
    mid = _key(b)
    assert s.proc is not None
    os.kill(s.proc.pid, signal.SIGSTOP)
    try:
        # refused while the paused server still counts as holding the database
        refused = _rotate(env, *args)
        assert refused.returncode != 0
        assert "a running server holds this database" in refused.stderr, refused.stderr
        # paused past the bound: its row is as old as the pause would leave it (it
        # cannot refresh it while stopped), without waiting the bound out
        _age_presence(b["url"], presence.STALE_SECONDS + 1)
        done = _rotate(env, *args)
    finally:
        os.kill(s.proc.pid, signal.SIGCONT)
    assert done.returncode == 0, done.stderr
    assert "re-encrypted 3 secret" in done.stdout
    new = _key(b)
    assert new != mid
    status, out = _put_status(s, "paused", "four")  # the server that slept through it
    assert status == 503, out
    assert out["error"] == "key_rotated" and "nothing was written" in out["detail"], out
    assert _readable(b["url"], new) == three
    status, out = _put_status(s, "paused", "four")  # it reloaded the key: the retry writes
    assert status == 200, out
    s.stop()
    s = start_server(data_dir=b["data"], db_url=b["db"], env=env)  # a restart on it
    _put_secret(s, "last", "five")
    s.stop()
    assert _readable(b["url"], new) == {**three, "paused": "four", "last": "five"}
    # every row names the key it is encrypted with; no row uses an old key, so the
    # rotation kept no copy of it
    from dreamlake.controlplane.db import make_engine
    from dreamlake.controlplane.registry.models import Secret
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    engine = make_engine(b["url"])
    try:
        with Session(engine) as session:
            assert set(session.scalars(select(Secret.key_id))) == {key_id(new)}
    finally:
        engine.dispose()
    key_file = Path(b.get("key_file") or b["data"] / "secret.key")
    assert not key_file.with_name(key_file.name + ".previous").exists()


def test_a_refused_replica_creates_nothing(
    backend: dict[str, Any], start_server: Callable[..., ServerProc], tmp_path: Path
) -> None:
    """A replica whose key is not the database's refuses to start and writes no admin
    token, no token row and no presence row."""
    from cryptography.fernet import Fernet
    from dreamlake.controlplane.db import make_engine
    from dreamlake.controlplane.models import ServerMeta, Token
    from sqlalchemy import func, select
    from sqlalchemy.orm import Session

    b = backend
    first = start_server(data_dir=b["data"], db_url=b["db"], env=_key_env(b))

    def counts() -> tuple[int, list[str]]:
        engine = make_engine(b["url"])
        try:
            with Session(engine) as session:
                tokens = session.scalar(select(func.count()).select_from(Token)) or 0
                meta = sorted(session.scalars(select(ServerMeta.key)))
                return tokens, meta
        finally:
            engine.dispose()

    before = counts()
    other = tmp_path / "replica"
    argv = [*lakeshore_argv(), "serve", "--port", str(free_port()), "--data-dir", str(other)]
    argv += ["--db", b["url"]]
    wrong = {"LAKESHORE_SECRET_KEY": Fernet.generate_key().decode()}
    # two at once: neither leaves anything behind for the other or for a later start
    replicas = [
        subprocess.Popen(
            argv,
            env=clean_env(**wrong),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for replica in replicas:
        _, err = replica.communicate(timeout=120)
        assert replica.returncode != 0 and "not the key" in err, err[-800:]
    assert counts() == before
    assert not (other / "admin.token").exists()
    assert first.admin.whoami()["admin"] is True
