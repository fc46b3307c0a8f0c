"""The command the ``lakeshore`` CLI names next when the control plane refuses its
token: a 401 (no token, or one unknown, revoked or expired) or a 403 (a token of
another namespace, or one that is not an admin's for an admin route).

The command is always one to run: this command again with ``--token-file`` naming
the file to use (replacing the one given), the server's admin token under this
machine's data dir when it is here, else a file to make with what to put in it
said in a comment beside it; or, when this machine's admin token itself is
refused, ``lakeshore serve`` restarted on its data dir (a start writes a new
admin token there when the database has no working one, else says where the
database's admin token is kept)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from .rerun import command, data_dir, with_option

__all__ = ["token_next_step"]


def token_next_step(status: int, detail: object, namespace: str | None, sent: str | None) -> str:
    """The next command for a ``status`` of 401 or 403 with the server's ``detail``,
    about ``namespace`` (when the command names one), ``sent`` being the token the
    request carried (None: none)."""
    import os

    ns = namespace or os.environ.get("LAKESHORE_NAMESPACE") or "default"
    admin = _admin_file()
    admin_token = _read(admin) if admin is not None else None
    mint = f"lakeshore tokens create --namespace {shlex.quote(ns)}"
    if status == 401:
        if admin is not None and sent is not None and sent == admin_token:
            return (
                f"lakeshore serve --data-dir {shlex.quote(str(admin.parent))}   "
                f"# on the server, restarted: it writes a new admin token to {admin} "
                "when the database has no working one, else says where that one is kept"
            )
        if admin is not None:
            return _again(str(admin))
        return (
            f"{_again('token')}   # token: a file holding a token an admin makes with "
            f"{mint} (or the server's admin token, <data dir>/admin.token on the server)"
        )
    if admin is not None and sent != admin_token:
        return _again(str(admin))
    if isinstance(detail, str) and "admin" in detail:
        return (
            f"{_again('admin.token')}   # admin.token: a copy of the server's "
            "<data dir>/admin.token"
        )
    return (
        f"{_again('token')}   # token: a file holding a token of namespace {ns} "
        f"(or of its org, to read) an admin makes with {mint}"
    )


def _again(token_file: str) -> str:
    """This command again with ``--token-file token_file`` (replacing the one given:
    a token file given on the command line wins over the environment's)."""
    argv = with_option("--token-file", token_file)
    return command(argv if argv is not None else [*sys.argv[1:], "--token-file", token_file])


def _admin_file() -> Path | None:
    """The admin token file under this machine's data dir (``--data-dir``, else
    ``LAKESHORE_DATA_DIR``, else the user data dir) when it is there."""
    from dreamlake.controlplane.server.settings import ADMIN_TOKEN_FILE

    path = data_dir() / ADMIN_TOKEN_FILE
    return path if path.is_file() else None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except (OSError, UnicodeDecodeError):
        return None
