"""``lakeshore tokens list|revoke|rotate-admin`` and ``lakeshore keys rotate``: the
token lifecycle over the API, and the secret key's rotation on the database itself.

    lakeshore tokens list [--revoked] [--json]
    lakeshore tokens revoke ID
    lakeshore tokens rotate-admin [--write FILE]     # the old admin token stops working
    lakeshore keys rotate [--db URL] [--data-dir DIR] [--new-key-file FILE]
    lakeshore namespaces set-org NAME ORG | --none

``keys rotate`` re-encrypts every secret with a new key in one transaction. It is
refused while any server holds the database (it names them): stop every replica
first and start them again with the new key (a replica still on the old key
refuses to start: its key no longer matches the database's key check).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from .common import fail
from .options import (
    DataDirOpt,
    JsonOpt,
    ServerOpt,
    TokenFileOpt,
    call,
    emit,
    make_client,
)

keys_app = typer.Typer(help="The secret key every replica shares.", no_args_is_help=True)


def _token_line(t: dict[str, Any]) -> str:
    scope = "admin" if t.get("admin") else f"namespace {t.get('namespace')}"
    kind = t.get("scope")
    if kind in ("daemon", "bootstrap"):  # a bootstrap token only asks for a daemon's certificate
        scope += f" {kind} of {t.get('provider')}"
        scope += f" instance {t['instance']}" if t.get("instance") else ""
        scope += f" on {t['host']}" if t.get("host") else ""
    elif kind == "metrics":
        scope += " metrics"
    extra = ""
    if t.get("expiresAt"):
        extra += f", expires {t['expiresAt']}"
    if t.get("revokedAt"):
        extra += f", revoked {t['revokedAt']}"
    return f"{t['id']:>5}  {scope}  {t.get('label') or '-'}  (created {t['createdAt']}{extra})"


def register(tokens_app: typer.Typer) -> None:
    """Add list, revoke and rotate-admin to ``lakeshore tokens``."""

    @tokens_app.command("list")
    def tokens_list(
        revoked: Annotated[bool, typer.Option("--revoked", help="Include revoked tokens.")] = False,
        server: ServerOpt = None,
        token_file: TokenFileOpt = None,
        data_dir: DataDirOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Every token (id, scope, label, dates); never the token itself."""
        client = make_client(server, token_file, data_dir)
        rows = call(client.request, "GET", "/api/tokens", query={"revoked": str(revoked).lower()})
        emit(rows, as_json, "\n".join(_token_line(r) for r in rows) or "(no tokens)")

    @tokens_app.command("revoke")
    def tokens_revoke(
        token_id: Annotated[int, typer.Argument(help="The id `lakeshore tokens list` shows.")],
        server: ServerOpt = None,
        token_file: TokenFileOpt = None,
        data_dir: DataDirOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Revoke a token: every replica refuses it from now on."""
        client = make_client(server, token_file, data_dir)
        row = call(client.request, "DELETE", f"/api/tokens/{token_id}")
        emit(row, as_json, f"revoked token {row['id']} ({row.get('label') or 'no label'})")

    @tokens_app.command("rotate-admin")
    def tokens_rotate_admin(
        write: Annotated[
            Path | None,
            typer.Option("--write", help="Also write the new token to this file (0600)."),
        ] = None,
        server: ServerOpt = None,
        token_file: TokenFileOpt = None,
        data_dir: DataDirOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """A new admin token; the one used for this call is revoked. The server's own
        admin token file is rewritten when it held the old token."""
        from dreamlake.controlplane.server.bootstrap import write_secret_file

        client = make_client(server, token_file, data_dir)
        out = call(client.request, "POST", "/api/tokens/rotate-admin", {})
        target = write or token_file
        if target is not None:
            write_secret_file(target.expanduser(), out["token"] + "\n")
        note = f" (written to {target})" if target is not None else ""
        emit(out, as_json, f"{out['token']}\nthe previous admin token is revoked{note}")


def register_namespaces(namespaces_app: typer.Typer) -> None:
    """Add ``set-org`` to ``lakeshore namespaces``."""

    @namespaces_app.command("set-org")
    def namespaces_set_org(
        name: Annotated[str, typer.Argument(help="The namespace (default included).")],
        org: Annotated[
            str | None, typer.Argument(help="The org id; leave out with --none to remove.")
        ] = None,
        none: Annotated[
            bool, typer.Option("--none", help="Take the namespace out of its org.")
        ] = False,
        server: ServerOpt = None,
        token_file: TokenFileOpt = None,
        data_dir: DataDirOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Give a namespace an org (its listings and lookups then span the org)."""
        from urllib.parse import quote

        if (org is None) == (not none):
            fail("give an ORG, or --none to take the namespace out of its org")
        client = make_client(server, token_file, data_dir)
        row = call(
            client.request, "PATCH", f"/api/namespaces/{quote(name, safe='')}", {"orgId": org}
        )
        emit(row, as_json, f"namespace {row['name']}: org {row.get('orgId') or '(none)'}")


@keys_app.command("rotate")
def keys_rotate(
    db: Annotated[
        str | None, typer.Option("--db", help="Database URL (default: LAKESHORE_DB, else SQLite).")
    ] = None,
    data_dir: DataDirOpt = None,
    new_key_file: Annotated[
        Path | None,
        typer.Option(
            "--new-key-file",
            help="Where the new key goes (default: where the current key came from, when "
            "that is a file).",
        ),
    ] = None,
) -> None:
    """Re-encrypt every secret with a fresh key, in one transaction."""
    from dreamlake.controlplane.db import make_engine, redact_url, run_migrations
    from dreamlake.controlplane.registry.crypto import SecretKeyError, generate_key
    from dreamlake.controlplane.server.access.keys import (
        KeyRotationRefused,
        key_source,
        load_key,
        load_previous,
        previous_key_path,
        rotate_key,
        rows_on_other_keys,
        write_key_file,
    )
    from dreamlake.controlplane.server.settings import Settings

    settings = Settings.from_env(data_dir=data_dir, db_url=db)
    if settings.secret_key and new_key_file is None:
        fail(
            "the current key comes from LAKESHORE_SECRET_KEY; say where the new one goes",
            "lakeshore keys rotate --new-key-file FILE (then set LAKESHORE_SECRET_KEY from it)",
        )
    target = new_key_file or Path(key_source(settings))
    previous = previous_key_path(target)
    url = settings.database_url()
    try:
        old = load_key(settings)
        earlier = load_previous(settings)
        new = generate_key()
        engine = make_engine(url, 1)
        run_migrations(engine)
        staged = target.with_name(f".{target.name}.new")
        write_key_file(staged, new, replace=True)  # the new key is safe on disk first
        kept = target.with_name(f".{target.name}.previous.new")
        write_key_file(kept, old, replace=True)  # and the current one, to keep
        count = rotate_key(engine, old, new, earlier)
        kept.replace(previous)  # kept until no row uses it (below)
        staged.replace(target)
        left = rows_on_other_keys(engine, new)
        if left == 0:
            previous.unlink(missing_ok=True)
    except KeyRotationRefused as exc:
        staged.unlink(missing_ok=True)
        kept.unlink(missing_ok=True)
        fail(str(exc), "stop every lakeshore serve over this database, then: lakeshore keys rotate")
    except SecretKeyError as exc:
        fail(str(exc), "check LAKESHORE_SECRET_KEY / LAKESHORE_SECRET_KEY_FILE / --data-dir")
    except Exception as exc:
        fail(redact_url(f"rotation failed, nothing changed: {type(exc).__name__}: {exc}", url))
    typer.echo(
        f"re-encrypted {count} secret(s); the new key is in {target}. Restart every "
        f"replica with it (one still on the old key refuses to start; one that was "
        f"paused through the rotation refuses to write secrets and reloads it)."
        + (f" {left} secret(s) still use another key: it stays in {previous}." if left else "")
    )
