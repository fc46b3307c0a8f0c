"""The ``lakeshore`` command: run the control plane, and its admin path.

    lakeshore serve [--host 127.0.0.1] [--port 7878] [--db URL] [--data-dir DIR]
    lakeshore namespaces add NAME [--org ORG]
    lakeshore namespaces list
    lakeshore tokens create --namespace NS [--expires-in SECONDS]
    lakeshore tokens list | revoke ID | rotate-admin      (cli/lakeshore/fleet.py)
    lakeshore keys rotate                                  (cli/lakeshore/fleet.py)

The admin commands talk to a running server: ``--server`` (or ``LAKESHORE_URL``,
default http://127.0.0.1:7878) with ``--token-file`` (or ``LAKESHORE_TOKEN`` /
``LAKESHORE_TOKEN_FILE``, default the admin token file ``serve`` wrote under
``--data-dir``). Nothing here prompts.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..completion import namespaces
from ..conventions import HELP_OPTIONS, plain_help, version_callback
from .common import fail

if TYPE_CHECKING:
    pass

app = typer.Typer(
    name="lakeshore",
    help="The lakeshore control plane: namespaces, tokens, workers and claims.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings=HELP_OPTIONS,
)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=version_callback("lakeshore"),
            is_eager=True,
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    pass


namespaces_app = typer.Typer(help="Namespaces (admin).", no_args_is_help=True)
tokens_app = typer.Typer(help="Namespace-scoped bearer tokens (admin).", no_args_is_help=True)
app.add_typer(namespaces_app, name="namespaces")
app.add_typer(tokens_app, name="tokens")

# Sub-apps from other modules mount here, one line each, e.g.:
#   from dreamlake.cli.lakeshore.registry import providers_app, secrets_app, modes_app
#   app.add_typer(providers_app, name="providers")
# --- registry sub-apps ---
from dreamlake.cli.lakeshore.registry import modes_app, providers_app, secrets_app  # noqa: E402

app.add_typer(providers_app, name="providers")
app.add_typer(secrets_app, name="secrets")
app.add_typer(modes_app, name="modes")
# --- end registry sub-apps ---
# --- launch sub-apps ---
from dreamlake.cli.lakeshore.launch import instances_app, launch_command, queues_app  # noqa: E402

app.command("launch")(launch_command)
app.add_typer(instances_app, name="instances")
app.add_typer(queues_app, name="queues")
# --- end launch sub-apps ---
# --- capacity sub-apps ---
from dreamlake.cli.lakeshore.capacity import capacity_app, lease_app  # noqa: E402

app.add_typer(capacity_app, name="capacity")
app.add_typer(lease_app, name="lease")
# --- end capacity sub-apps ---

# -- shared connection options: cli/lakeshore/options.py (the sub-apps use them too)
from .options import (  # noqa: E402
    DataDirOpt,
    JsonOpt,
    ServerOpt,
    TokenFileOpt,
    call,
    emit,
    make_client,
)

# -- serve -------------------------------------------------------------------------


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to bind.")] = 7878,
    db: Annotated[
        str | None,
        typer.Option(
            "--db", envvar="LAKESHORE_DB", help="Database URL (default: SQLite under --data-dir)."
        ),
    ] = None,
    data_dir: DataDirOpt = None,
    live_seconds: Annotated[
        float | None,
        typer.Option(
            help="A worker is live while its last heartbeat is newer than this (default 30)."
        ),
    ] = None,
    max_body_bytes: Annotated[
        int, typer.Option(help="Largest request body accepted (413 above).")
    ] = 1024 * 1024,
    log_level: Annotated[
        str, typer.Option(envvar="LAKESHORE_LOG_LEVEL", help="debug, info, warning or error.")
    ] = "warning",
    log_format: Annotated[
        str,
        typer.Option(envvar="LAKESHORE_LOG_FORMAT", help="text lines or json lines on stderr."),
    ] = "text",
    access_log: Annotated[
        bool,
        typer.Option(
            "--access-log/--no-access-log",
            envvar="LAKESHORE_ACCESS_LOG",
            help="Log one record per request (method, route template, status, duration, "
            "client, request id): a JSON object each with --log-format json.",
        ),
    ] = False,
    pool_size: Annotated[
        int | None,
        typer.Option(
            help="Worker threads for blocking route code; the database pool holds this "
            "many connections plus 4 (default: LAKESHORE_POOL_SIZE, else 32)."
        ),
    ] = None,
    probe_port: Annotated[
        int | None,
        typer.Option(
            help="Also serve /healthz and /readyz on this port, off the event loop, so "
            "probes answer under any load (default: LAKESHORE_PROBE_PORT, else none)."
        ),
    ] = None,
    tls_cert: Annotated[
        Path | None,
        typer.Option(
            "--tls-cert",
            help="Serve HTTPS with this certificate (PEM, chain after it), on the probe "
            "port too; reloaded on SIGHUP or when the file changes.",
        ),
    ] = None,
    tls_key: Annotated[
        Path | None, typer.Option("--tls-key", help="The private key of --tls-cert (PEM).")
    ] = None,
    tls_ca: Annotated[
        Path | None,
        typer.Option(
            "--tls-ca",
            envvar="LAKESHORE_TLS_CA",
            help="The CA certificate(s) (PEM) that verify --tls-cert: a launched "
            "instance's daemon is handed them to verify this server with (default: the "
            "chain's own root, if --tls-cert includes it, else the host's trust store).",
        ),
    ] = None,
    tls_name: Annotated[
        list[str] | None,
        typer.Option(
            "--tls-name",
            help="Another name or address the built-in CA's server certificate covers "
            "(a load balancer's, a DNS alias); repeat for more.",
        ),
    ] = None,
    insecure_http: Annotated[
        bool,
        typer.Option(
            "--insecure-http",
            help="Serve plain HTTP off loopback (tokens cross the network in clear "
            "text): said at start and in /readyz.",
        ),
    ] = False,
    tls_processes: Annotated[
        int | None,
        typer.Option(
            "--tls-processes",
            help="With TLS: processes that do the handshakes and relay each connection "
            "to the server, so its event loop spends no time on them, and that refuse a "
            "connection whose client has given up before any handshake, e.g. the "
            "machine's cores (default: LAKESHORE_TLS_PROCESSES, else 0: TLS on the event loop).",
        ),
    ] = None,
    client_cert_header: Annotated[
        str | None,
        typer.Option(
            "--client-cert-header",
            envvar="LAKESHORE_CLIENT_CERT_HEADER",
            help="Behind a TLS-terminating proxy: take a daemon's client certificate "
            "(URL-escaped PEM) from this header, e.g. X-SSL-Client-Cert (nginx "
            "$ssl_client_escaped_cert) or X-Amzn-Mtls-Clientcert (AWS ALB), only from "
            "--trusted-proxy peers; the server then signs daemons' certificates.",
        ),
    ] = None,
    trusted_proxy: Annotated[
        list[str] | None,
        typer.Option(
            "--trusted-proxy",
            envvar="LAKESHORE_TRUSTED_PROXIES",
            help="An address or network (CIDR) of a proxy in front: its "
            "X-Forwarded-Proto / X-Forwarded-For are taken (as from this machine's "
            "own), and its --client-cert-header believed; repeat for more (the "
            "variable: separated by spaces). From any other peer the forwarded "
            "headers are ignored and the certificate header refused.",
        ),
    ] = None,
    launch_server_credentials: Annotated[
        bool,
        typer.Option(
            "--launch-server-credentials",
            help="Let an EC2 or GCE launch with no credentials secret use this server's "
            "own cloud credentials (its AWS chain, Google's application-default "
            "credentials), for every namespace (default: LAKESHORE_LAUNCH_SERVER_CREDENTIALS, "
            "else off: such a launch is refused).",
        ),
    ] = False,
) -> None:
    """Run the control plane (FastAPI under uvicorn); migrate the database first.
    Off loopback it serves HTTPS: with --tls-cert/--tls-key, else with a certificate
    from a CA it makes (its path and fingerprint are printed at start)."""
    from ..extras import install_line, missing

    if gone := missing("server"):
        fail(
            f"lakeshore serve needs the server extra ({', '.join(gone)} not installed)",
            install_line("server"),
        )
    from dreamlake.controlplane.logsetup import configure
    from dreamlake.controlplane.server.settings import Settings

    try:
        configure("LAKESHORE", fmt=log_format, level=log_level)
    except ValueError as exc:
        fail(str(exc), "lakeshore serve --help")
    import logging

    # the access log is the app's own (controlplane/server/requestlog.py), not uvicorn's
    logging.getLogger("lakeshore.access").setLevel(logging.INFO if access_log else logging.WARNING)

    if live_seconds is not None and live_seconds <= 0:
        fail("--live-seconds must be positive")
    if pool_size is not None and pool_size < 1:
        fail("--pool-size must be at least 1")
    if probe_port is not None and (not 0 < probe_port < 65536 or probe_port == port):
        fail("--probe-port must be a free port from 1 to 65535, other than --port")
    if (tls_cert is None) != (tls_key is None):
        fail(
            "--tls-cert and --tls-key go together", "lakeshore serve --tls-cert FILE --tls-key FILE"
        )
    if tls_ca is not None and tls_cert is None:
        fail(
            "--tls-ca names the CA of --tls-cert: give it with --tls-cert and --tls-key",
            "lakeshore serve --tls-cert FILE --tls-key FILE --tls-ca CA.pem",
        )
    if tls_processes is not None and tls_processes < 0:
        fail("--tls-processes must be 0 (TLS on the event loop) or more")
    if tls_cert is not None and insecure_http:
        fail(
            "--insecure-http serves plain HTTP: leave it out with --tls-cert",
            "lakeshore serve --tls-cert FILE --tls-key FILE",
        )
    if tls_name and (tls_cert is not None or insecure_http):
        fail(
            "--tls-name adds a name to the built-in CA's certificate, which is not served "
            + ("with --tls-cert: that certificate's own names must cover it"
               if tls_cert is not None else "with --insecure-http"),
            "lakeshore serve --host HOST --tls-name NAME   # the built-in CA, no --tls-cert",
        )  # fmt: skip
    from .serve_tls import check_forwarded, forwarded_certs, forwarded_headers, serving_tls

    check_forwarded(client_cert_header, trusted_proxy or [])
    settings = Settings.from_env(
        data_dir=data_dir,
        db_url=db,
        live_seconds=live_seconds,
        max_body_bytes=max_body_bytes,
        pool_size=pool_size,
        probe_port=probe_port,
        tls_processes=tls_processes,
        launch_server_credentials=True if launch_server_credentials else None,
    )
    from dreamlake.controlplane.server.fleet.serving import prepare

    prepare(settings)  # the open-files limit, and the connections served before a 503
    import gc

    gc.disable()  # until the app is built: serving.collect_start_up collects once
    try:
        from dreamlake.controlplane.server.app import create_app

        application = create_app(settings)
    except Exception as exc:
        from dreamlake.controlplane.db import redact_url
        from dreamlake.controlplane.registry.crypto import SecretKeyError
        from dreamlake.controlplane.server.access.keys import key_source

        url = settings.database_url()
        fail(
            redact_url(f"cannot start on {url!r}: {type(exc).__name__}: {exc}", url),
            (
                f"fix the secret key (this server read it from {key_source(settings)}): "
                "every replica needs the first server's key, as LAKESHORE_SECRET_KEY or "
                "LAKESHORE_SECRET_KEY_FILE naming a copy of its key file"
            )
            if isinstance(exc, SecretKeyError)
            else "check --db / LAKESHORE_DB and that --data-dir is writable",
        )
    tls = serving_tls(
        application, settings, host, tls_cert, tls_key, tls_name or [], insecure_http, tls_ca
    )
    forwarded_certs(application, settings.data_dir, client_cert_header, trusted_proxy or [])
    forwarded_headers(trusted_proxy or [])
    scheme = "https" if tls is not None else "http"
    elsewhere = application.state.admin_token_elsewhere
    typer.echo(
        f"lakeshore listening on {scheme}://{host}:{port} "
        f"(database: {application.state.engine.dialect.name}, "
        f"admin token: {'none here' if elsewhere else application.state.admin_token_file})",
        err=True,
    )
    if elsewhere:
        typer.echo(f"admin token: {elsewhere}", err=True)
    from dreamlake.controlplane.server.fleet import serving

    try:
        serving.run(
            application,
            settings,
            host=host,
            port=port,
            log_level=log_level.lower(),
            access_log=False,  # the app logs each request itself, with its fields
            tls=tls,
            trusted_proxies=trusted_proxy or [],
        )
    except serving.ProbePortError as exc:
        fail(str(exc), "lakeshore serve --probe-port <a free port>")
    except serving.ListenError as exc:
        fail(str(exc), "lakeshore serve --port <a free port>")


# -- namespaces and tokens -------------------------------------------------------


@namespaces_app.command("add")
def namespaces_add(
    name: Annotated[str, typer.Argument(help="Namespace name (^[a-z0-9][a-z0-9-]*$).")],
    org: Annotated[
        str | None, typer.Option("--org", help="Org id shared by sibling namespaces.")
    ] = None,
    server: ServerOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Create a namespace (admin token)."""
    client = make_client(server, token_file, data_dir)
    out = call(client.create_namespace, name, org)
    org_text = f" (org {out['orgId']})" if out.get("orgId") else ""
    emit(out, as_json, f"created namespace {out['name']}{org_text}")


@namespaces_app.command("list")
def namespaces_list(
    server: ServerOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List namespaces."""
    client = make_client(server, token_file, data_dir)
    rows = call(client.list_namespaces)
    lines = [f"{r['name']}\t{r.get('orgId') or ''}".rstrip() for r in rows]
    emit(rows, as_json, "\n".join(lines) if lines else "(no namespaces)")


@tokens_app.command("create")
def tokens_create(
    namespace: Annotated[
        str,
        typer.Option(
            "--namespace",
            "-N",
            help="The namespace the token is scoped to.",
            autocompletion=namespaces,
        ),
    ],
    label: Annotated[str | None, typer.Option(help="A note stored with the token.")] = None,
    expires_in: Annotated[
        int | None, typer.Option("--expires-in", help="Seconds until the token stops working.")
    ] = None,
    daemon_for: Annotated[
        str | None,
        typer.Option(
            "--daemon-for",
            help="A daemon's token for this provider: it may only register, heartbeat, "
            "poll and report for it.",
        ),
    ] = None,
    host: Annotated[
        str | None,
        typer.Option(help="With --daemon-for: the daemon's host; replaces its earlier token."),
    ] = None,
    metrics: Annotated[
        bool,
        typer.Option(
            "--metrics",
            help="A monitoring system's token: it may only read GET /metrics "
            "and open the dashboard (/ui).",
        ),
    ] = False,
    server: ServerOpt = None,
    token_file: TokenFileOpt = None,
    data_dir: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Create a bearer token scoped to NAMESPACE; prints the token (shown once)."""
    client = make_client(server, token_file, data_dir)
    scoped: dict[str, str] = {}
    if metrics and (daemon_for is not None or host is not None):
        fail(
            "--metrics is a token of its own: drop --daemon-for and --host",
            f"lakeshore tokens create --namespace {namespace} --metrics",
        )
    if metrics:
        scoped = {"scope": "metrics"}
    elif daemon_for is not None:
        scoped = {"scope": "daemon", "provider": daemon_for, **({"host": host} if host else {})}
    elif host is not None:
        fail("--host goes with --daemon-for PROVIDER")
    token = call(client.create_token, namespace, label, expires_in, **scoped)
    emit(
        {"token": token, "namespace": namespace, "label": label, **scoped},
        as_json,
        token,
    )


# -- claims and work: cli/lakeshore/work.py -------------------------------------------
from .work import claims, work_app  # noqa: E402

app.add_typer(work_app, name="work")
app.command()(claims)


def _register_fleet() -> None:
    """Token lifecycle and key rotation (``cli/lakeshore/fleet.py``, which builds on this
    module's options, so it is imported once this module is)."""
    from dreamlake.cli.lakeshore import fleet as lakeshore_fleet

    lakeshore_fleet.register(tokens_app)
    lakeshore_fleet.register_namespaces(namespaces_app)
    app.add_typer(lakeshore_fleet.keys_app, name="keys")


if __name__ != "__main__":  # run as a script, the importable module below registers them
    _register_fleet()
    plain_help(app)


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["serve"]:  # a server traces each request it answers instead
        _main()
        return
    from ..tracing import traced

    traced("lakeshore", args, _main)


def _main() -> None:
    from ..conventions import text_streams
    from .argtext import refuse_non_utf8
    from .common import usage_error

    text_streams()
    args = sys.argv[1:]
    from ..completion import completion_script

    if (shown := completion_script(args, "lakeshore")) is not None:
        sys.exit(shown)
    try:
        refuse_non_utf8(args)  # before any command: a traceback otherwise (argtext.py)
        rv = app(args=args, prog_name="lakeshore", standalone_mode=False)
    except typer.Exit as exc:
        sys.exit(exc.exit_code or 0)
    except typer.Abort:
        typer.echo("Aborted!", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:
        # click's errors: the usage family (unknown command, bad or missing flag) in
        # the one error shape, --json honoured; others as click shows them
        names = {c.__name__ for c in type(exc).__mro__}
        if "NoArgsIsHelpError" in names:
            sys.stdout.write(exc.format_message() + "\n")  # type: ignore[attr-defined]
            sys.exit(0)
        if "UsageError" in names:
            sys.exit(usage_error(exc, args))
        if "ClickException" in names:
            exc.show()  # type: ignore[attr-defined]
            sys.exit(int(getattr(exc, "exit_code", 1)))
        raise
    finally:
        import gc

        gc.enable()  # serve turns it off while it starts (a start that failed too)
    sys.exit(rv if isinstance(rv, int) else 0)


if __name__ == "__main__":  # python -m dreamlake.cli.lakeshore.app
    from dreamlake.cli.lakeshore.app import main as _registered_main

    _registered_main()
