"""The one secret key every replica shares, checked against the database.

Where the key comes from, first hit wins: ``Settings.secret_key``
(``LAKESHORE_SECRET_KEY``), the file ``Settings.secret_key_file``
(``LAKESHORE_SECRET_KEY_FILE``, which must exist), else ``<data dir>/secret.key``
(created 0600, race-free, on the first start).

The database keeps a *key check*: the Fernet token of a fixed text, written by the
first server to start (``INSERT`` under the primary key, so of two servers starting
together one wins and the other checks against it). A server whose key cannot
decrypt it refuses to start: it would write secrets its peers cannot read.

:func:`rotate_key` re-encrypts every secret and the check in one transaction, and
refuses while any server holds the database (see ``presence.py``). It also sets the
database's current key id (``crypto.CURRENT_KEY_ID``): a server paused through the
rotation (not counted as holding the database) finds its key stale before its next
encrypting write, refuses it and reloads (``crypto.require_current``). The previous
key is kept beside the new one (``<key file>.previous``) until no row uses it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path

from sqlalchemy import Engine, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ...models import ServerMeta
from ...registry.crypto import (
    CURRENT_KEY_ID,
    KEY_FILE_NAME,
    SecretBox,
    SecretDecryptError,
    SecretKeyError,
    _fernet,
    generate_key,
    key_id,
)
from ..fleet import presence
from ..settings import Settings


class KeyRotationRefused(SecretKeyError):
    """A server holds the database: rotating under it could leave secrets unreadable."""


CHECK_KEY = "secret_key_check"
CHECK_TEXT = "lakeshore key check"
_CHECK_NS = "-"


PREVIOUS_SUFFIX = ".previous"


def previous_key_path(key_file: Path) -> Path:
    """Where a rotation keeps the key before it, beside the key file."""
    return key_file.with_name(key_file.name + PREVIOUS_SUFFIX)


def load_previous(settings: Settings) -> list[bytes]:
    """The previous key kept by a rotation beside this server's key file, if any."""
    if settings.secret_key:
        return []
    path = previous_key_path(Path(key_source(settings)).expanduser())
    if not path.is_file():
        return []
    return [_read_key_file(path)]


def key_source(settings: Settings) -> str:
    if settings.secret_key:
        return "LAKESHORE_SECRET_KEY"
    if settings.secret_key_file is not None:
        return str(settings.secret_key_file)
    return str(settings.data_dir / KEY_FILE_NAME)


def _read_key_file(path: Path) -> bytes:
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise SecretKeyError(f"{path} is readable by others (mode {mode:o}); run: chmod 600 {path}")
    key = path.read_bytes().strip()
    _fernet(key)
    return key


def write_key_file(path: Path, key: bytes, *, replace: bool = False) -> None:
    """Write ``key`` to ``path`` (0600). Without ``replace`` an existing file wins:
    the key is linked into place, so two processes never overwrite each other."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, key + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        if replace:
            os.replace(tmp, path)
            return
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def load_key(settings: Settings) -> bytes:
    """The configured key (see the module docstring); creates the data-dir file once."""
    if settings.secret_key:
        key = settings.secret_key.strip().encode()
        _fernet(key)
        return key
    if settings.secret_key_file is not None:
        path = Path(settings.secret_key_file).expanduser()
        if not path.is_file():
            raise SecretKeyError(
                f"LAKESHORE_SECRET_KEY_FILE names {path}, which does not exist; copy the key "
                f"file of the first server there (every replica needs the same key)"
            )
        return _read_key_file(path)
    path = settings.data_dir / KEY_FILE_NAME
    if not path.exists():
        write_key_file(path, generate_key())
    return _read_key_file(path)


def check_key(session: Session, box: SecretBox, source: str) -> None:
    """Verify ``box`` against the database's key check, writing it when absent. The
    check is read ``FOR SHARE``: a rotation under way is waited for (presence.py)."""
    row = session.scalar(
        select(ServerMeta).where(ServerMeta.key == CHECK_KEY).with_for_update(read=True)
    )
    if row is None:
        token = box.encrypt(CHECK_TEXT, namespace=_CHECK_NS, name=CHECK_KEY)
        session.add(ServerMeta(key=CHECK_KEY, value=token))
        try:
            session.commit()
            _record_key_id(session, box)
            return
        except IntegrityError:  # another replica wrote it first: check against theirs
            session.rollback()
            row = session.get(ServerMeta, CHECK_KEY)
            assert row is not None
    try:
        ok = box.decrypt(row.value, namespace=_CHECK_NS, name=CHECK_KEY) == CHECK_TEXT
    except SecretDecryptError:
        ok = False
    if not ok:
        raise SecretKeyError(
            f"the secret key from {source} is not the key this database's secrets are "
            f"encrypted with (another server over the same database uses a different key). "
            f"Every replica must use one key: set LAKESHORE_SECRET_KEY, or "
            f"LAKESHORE_SECRET_KEY_FILE naming a copy of the first server's key file"
        )
    _record_key_id(session, box)


def _record_key_id(session: Session, box: SecretBox) -> None:
    """The key check passed: ``box``'s key is the database's. Record its id as the
    current one (a database from before key ids has none) and give the secrets
    written before key ids (NULL) that id: the key check held them to this key."""
    from ...registry.models import Secret

    session.rollback()  # end the FOR SHARE read: the writes below take their own locks
    current = session.get(ServerMeta, CURRENT_KEY_ID)
    if current is None:
        session.add(ServerMeta(key=CURRENT_KEY_ID, value=box.key_id))
    elif current.value != box.key_id:
        current.value = box.key_id
    try:
        # the update flushes the row added above: a replica that recorded it at the
        # same moment fails that flush, not only the commit
        session.execute(update(Secret).where(Secret.key_id.is_(None)).values(key_id=box.key_id))
        session.commit()
    except IntegrityError:  # another replica recorded it first: the same id
        session.rollback()


def rotate_key(
    engine: Engine, old: bytes, new: bytes, previous: Iterable[bytes] = ()
) -> int:
    """Re-encrypt every secret (and the key check) from ``old`` to ``new`` in one
    transaction. Returns how many secrets were re-encrypted."""
    from ...models import Namespace
    from ...registry.models import Secret

    old_box, new_box = SecretBox(old, previous), SecretBox(new)
    with Session(engine) as session, session.begin():
        # lock the key check first (a row lock on PostgreSQL, the write lock on
        # SQLite), then look for servers: see presence.py for why this order is safe
        session.execute(
            update(ServerMeta).where(ServerMeta.key == CHECK_KEY).values(value=ServerMeta.value)
        )
        live = presence.holders(session)
        if live:
            raise KeyRotationRefused(
                "a running server holds this database: "
                + "; ".join(h.describe() for h in live)
                + ". It keeps the current key in memory, so a secret it writes after the "
                "rotation could not be read once it restarts. Stop every server over this "
                f"database, then rotate (a server that was killed counts as gone "
                f"{presence.STALE_SECONDS:.0f} s after it was last seen); nothing changed"
            )
        check = session.get(ServerMeta, CHECK_KEY)
        if check is not None:
            try:
                old_box.decrypt(check.value, namespace=_CHECK_NS, name=CHECK_KEY)
            except SecretDecryptError:
                raise SecretKeyError(
                    "the current key does not match the database's key check; nothing changed"
                ) from None
        # the new current id first: a write checking its key (crypto.require_current)
        # holds this row until it commits, so every secret written with the old key
        # is committed, and re-encrypted below, before the rotation reads the secrets
        current = session.get(ServerMeta, CURRENT_KEY_ID, with_for_update=True)
        if current is None:
            session.add(ServerMeta(key=CURRENT_KEY_ID, value=new_box.key_id))
        else:
            current.value = new_box.key_id
        session.flush()
        names = dict(session.execute(select(Namespace.id, Namespace.name)).all())
        count = 0
        for row in session.scalars(select(Secret).with_for_update()):
            ns = names[row.namespace_id]
            plain = old_box.decrypt(row.ciphertext, namespace=ns, name=row.name, key_id=row.key_id)
            row.ciphertext = new_box.encrypt(plain, namespace=ns, name=row.name)
            row.key_id = new_box.key_id
            count += 1
        from ..builtin_ca import reseal  # the built-in CA's key is sealed as secrets are

        reseal(session, old_box, new_box)
        token = new_box.encrypt(CHECK_TEXT, namespace=_CHECK_NS, name=CHECK_KEY)
        if check is None:
            session.add(ServerMeta(key=CHECK_KEY, value=token))
        else:
            check.value = token
    return count


def rows_on_other_keys(engine: Engine, current: bytes) -> int:
    """How many secrets are not encrypted with ``current`` (a rotation keeps the
    previous key while any is)."""
    from sqlalchemy import func, or_

    from ...registry.models import Secret

    with Session(engine) as session:
        return int(
            session.scalar(
                select(func.count())
                .select_from(Secret)
                .where(or_(Secret.key_id.is_(None), Secret.key_id != key_id(current)))
            )
            or 0
        )
