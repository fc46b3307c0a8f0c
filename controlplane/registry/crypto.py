"""Secret encryption at rest. The key never lives in the database.

Key source, first hit wins: ``LAKESHORE_SECRET_KEY`` (a Fernet key: 32 url-safe
base64 bytes), then ``<data dir>/secret.key`` (created 0600 on first use). Values
are Fernet tokens (AES-128-CBC + HMAC-SHA256, authenticated); the secret's name and
namespace are bound into the plaintext envelope so a ciphertext copied onto another
row does not decrypt as that row.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

KEY_ENV = "LAKESHORE_SECRET_KEY"
KEY_FILE_NAME = "secret.key"


class SecretKeyError(RuntimeError):
    """The server key is missing, malformed, or readable by others."""


class SecretDecryptError(RuntimeError):
    """A stored value does not decrypt with this key (wrong key, or tampered row)."""


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
    """Encrypts and decrypts secret values with the server key."""

    def __init__(self, key: bytes) -> None:
        self._f = _fernet(key)

    def __repr__(self) -> str:
        return "SecretBox(<key hidden>)"

    @staticmethod
    def _aad(namespace: str, name: str) -> bytes:
        return f"{namespace}\x00{name}\x00".encode()

    def encrypt(self, plaintext: str, *, namespace: str, name: str) -> str:
        return self._f.encrypt(self._aad(namespace, name) + plaintext.encode("utf-8")).decode()

    def decrypt(self, token: str, *, namespace: str, name: str) -> str:
        from cryptography.fernet import InvalidToken

        try:
            raw = self._f.decrypt(token.encode())
        except InvalidToken:
            raise SecretDecryptError(
                f"secret {name!r} does not decrypt with this server's key"
            ) from None
        prefix = self._aad(namespace, name)
        if not raw.startswith(prefix):
            raise SecretDecryptError(f"secret {name!r} was encrypted for another row")
        return raw[len(prefix) :].decode("utf-8")
