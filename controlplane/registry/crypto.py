"""Secret encryption at rest. The key never lives in the database.

Key source, first hit wins: ``LAKESHORE_SECRET_KEY`` (a Fernet key: 32 url-safe
base64 bytes), then ``<data dir>/secret.key`` (created 0600 on first use). Values
are Fernet tokens (AES-128-CBC + HMAC-SHA256, authenticated); the secret's name and
namespace are bound into the plaintext envelope so a ciphertext copied onto another
row does not decrypt as that row.

Every key has an id (:func:`key_id`, a hash that reveals nothing of the key), stored
beside each secret and, as the current one, in the database (``server_meta``
``secret_key_id``). Before every write that encrypts, a server checks that its key
is the current one (:func:`require_current`, in the write's own transaction, so a
rotation cannot slip in between): a server paused through a rotation refuses the
write (:class:`StaleKeyError`, a 503) and reloads its key instead of writing a
secret nobody could read after its restart.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

KEY_ENV = "LAKESHORE_SECRET_KEY"
KEY_FILE_NAME = "secret.key"
CURRENT_KEY_ID = "secret_key_id"
"""The ``server_meta`` row holding the id of the key every secret is written with."""


class SecretKeyError(RuntimeError):
    """The server key is missing, malformed, or readable by others."""


class SecretDecryptError(RuntimeError):
    """A stored value does not decrypt with this key (wrong key, or tampered row)."""


class StaleKeyError(RuntimeError):
    """This server's key is no longer the database's current one (it was rotated
    while the server ran): nothing may be encrypted with it."""

    def __init__(self, held: str, current: str | None) -> None:
        super().__init__(
            f"this server's secret key (id {held}) is not the database's current key "
            f"(id {current or 'unknown'}): the key was rotated while this server ran"
        )
        self.held = held
        self.current = current


def key_id(key: bytes) -> str:
    """A short, stable id of ``key`` (a keyed-hash prefix; the key cannot be
    recovered from it)."""
    return hashlib.sha256(b"lakeshore secret key id\x00" + key.strip()).hexdigest()[:16]


def _fernet(key: bytes):  # type: ignore[no-untyped-def]
    from cryptography.fernet import Fernet

    try:
        return Fernet(key)
    except (ValueError, TypeError) as exc:
        raise SecretKeyError(
            "the secret key is not a Fernet key (32 url-safe base64-encoded bytes); "
            "generate one with: python -c 'from cryptography.fernet import Fernet; "
            "print(Fernet.generate_key().decode())'"
        ) from exc


def generate_key() -> bytes:
    from cryptography.fernet import Fernet

    return Fernet.generate_key()


def load_or_create_key(data_dir: Path | str | None) -> bytes:
    """The server key: ``$LAKESHORE_SECRET_KEY``, else the 0600 key file in ``data_dir``
    (created atomically when absent)."""
    env = os.environ.get(KEY_ENV, "").strip()
    if env:
        key = env.encode()
        _fernet(key)
        return key
    if data_dir is None:
        raise SecretKeyError(f"no {KEY_ENV} and no data directory to keep a key file in")
    path = Path(data_dir) / KEY_FILE_NAME
    if path.exists():
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:
            raise SecretKeyError(
                f"{path} is readable by others (mode {mode:o}); run: chmod 600 {path}"
            )
        key = path.read_bytes().strip()
        _fernet(key)
        return key
    path.parent.mkdir(parents=True, exist_ok=True)
    key = generate_key()
    tmp = path.with_name(f".{KEY_FILE_NAME}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, key + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)  # never replaces a key another process just wrote
    except FileExistsError:
        os.unlink(tmp)
        return load_or_create_key(data_dir)
    os.unlink(tmp)
    return key


class SecretBox:
    """Encrypts with the server key; decrypts with it or, for a row whose ``key_id``
    names one, with the ``previous`` key of that id (kept until no row uses it)."""

    def __init__(self, key: bytes, previous: Iterable[bytes] = ()) -> None:
        self._f = _fernet(key)
        self.key_id = key_id(key)
        self._by_id = {key_id(k): _fernet(k) for k in previous}
        self._by_id[self.key_id] = self._f

    def __repr__(self) -> str:
        return f"SecretBox(<key hidden>, id {self.key_id})"

    @property
    def key_ids(self) -> frozenset[str]:
        """The ids of every key this box can decrypt with."""
        return frozenset(self._by_id)

    @staticmethod
    def _aad(namespace: str, name: str) -> bytes:
        return f"{namespace}\x00{name}\x00".encode()

    def encrypt(self, plaintext: str, *, namespace: str, name: str) -> str:
        return self._f.encrypt(self._aad(namespace, name) + plaintext.encode("utf-8")).decode()

    def decrypt(
        self, token: str, *, namespace: str, name: str, key_id: str | None = None
    ) -> str:
        from cryptography.fernet import InvalidToken

        fernet = self._by_id.get(key_id, self._f) if key_id else self._f
        try:
            raw = fernet.decrypt(token.encode())
        except InvalidToken:
            where = f" (it was written with key id {key_id})" if key_id else ""
            raise SecretDecryptError(
                f"secret {name!r} does not decrypt with this server's key{where}"
            ) from None
        prefix = self._aad(namespace, name)
        if not raw.startswith(prefix):
            raise SecretDecryptError(f"secret {name!r} was encrypted for another row")
        return raw[len(prefix) :].decode("utf-8")


def require_current(session: Any, box: SecretBox) -> None:
    """Raise :class:`StaleKeyError` unless ``box``'s key is the database's current one.

    Run inside the transaction of the write that encrypts, before it: the statement
    is a no-op ``UPDATE`` of the current-id row, so it holds that row (PostgreSQL)
    or the write lock (SQLite) until the write commits, and a rotation, which
    changes the row, either waits for the write (and re-encrypts it) or has
    committed already (and the write is refused)."""
    from sqlalchemy import select, update

    from ..models import ServerMeta

    held = session.execute(
        update(ServerMeta)
        .where(ServerMeta.key == CURRENT_KEY_ID, ServerMeta.value == box.key_id)
        .values(value=ServerMeta.value)
    )
    if held.rowcount == 1:
        return
    current = session.scalar(select(ServerMeta.value).where(ServerMeta.key == CURRENT_KEY_ID))
    session.rollback()
    raise StaleKeyError(box.key_id, current)
