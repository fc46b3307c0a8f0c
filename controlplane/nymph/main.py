"""``nymph``: claim a provider in lakeshore from this host and run its work.

    nymph --server URL --token-file F --provider NAME --queues gpu,cpu [--instance-id ID]

``--server`` defaults to ``LAKESHORE_URL``; an ``https`` server is always verified,
against ``--ca`` (``LAKESHORE_CA``) or the system's trust store; several URLs, comma-separated (replicas
over one database), are tried in turn when one cannot be reached. The token comes from ``--token-file``,
else ``LAKESHORE_TOKEN``, else ``LAKESHORE_TOKEN_FILE``; ``--namespace`` defaults to
``LAKESHORE_NAMESPACE`` or ``default``; ``--instance-id`` to ``NYMPH_INSTANCE_ID`` or
the host name; ``--identity`` (the provider's identity, sent when registering) to
``NYMPH_PROVIDER_ID``. Over ``https`` the daemon authenticates with a client
certificate it asks for with its token (a bootstrap token, spent by it) and renews
(``--cert-dir``, see credentials.py). Exit 0 on SIGTERM/SIGINT (after deregistering), 2 on bad flags.
SIGUSR1 suspends: no new work, the running item finishes (a SIGTERM cuts it short),
deregister, exit 75 (a supervisor does not restart it). ``--pid-file`` names a file
holding the daemon's pid while it runs, so a suspend can signal exactly it.
Runs with stdin closed and never prompts.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from ..names import NAME_MAX, NAME_PATTERN, is_name


def _name(value: str) -> str:
    if not is_name(value):
        raise argparse.ArgumentTypeError(f"{value!r} is not a name ({NAME_PATTERN}, ≤{NAME_MAX})")
    return value


def _identity(value: str) -> str:
    import re

    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", value):
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a provider identity (letters, digits, '_', '.', '-'; ≤64)"
        )
    return value


def _queues(value: str) -> list[str]:
    queues = [q.strip() for q in value.split(",") if q.strip()]
    for q in queues:
        _name(q)
    return list(dict.fromkeys(queues))


def parser() -> argparse.ArgumentParser:
    from dreamlake import __version__

    p = argparse.ArgumentParser(
        prog="nymph",
        allow_abbrev=False,  # --name is no --namespace: an unknown flag is an error
        description="Claim a provider in the lakeshore control plane from this host and run "
        "its work. Always initiates the connection; retries forever on outages.",
    )
    p.add_argument("--version", action="version", version=f"nymph {__version__}")
    p.add_argument(
        "--server",
        default=os.environ.get("LAKESHORE_URL"),
        help="Control plane URL; several comma-separated are replicas to move between "
        "[env var: LAKESHORE_URL].",
    )
    p.add_argument(
        "--token-file",
        type=Path,
        help="File holding the bearer token [env var: LAKESHORE_TOKEN, LAKESHORE_TOKEN_FILE].",
    )
    p.add_argument(
        "--ca",
        default=os.environ.get("LAKESHORE_CA") or None,
        help="CA certificate (PEM) an https server is verified with; else the system's "
        "trust store [env var: LAKESHORE_CA].",
    )
    p.add_argument(
        "--cert-dir",
        type=Path,
        default=Path(os.environ["NYMPH_CERT_DIR"]) if os.environ.get("NYMPH_CERT_DIR") else None,
        help="Where an https daemon keeps its client certificate and key (asked for with "
        "the bootstrap token) [env var: NYMPH_CERT_DIR; default: the token file's folder].",
    )
    p.add_argument(
        "--namespace",
        default=os.environ.get("LAKESHORE_NAMESPACE") or "default",
        type=_name,
        help="Namespace of the provider [env var: LAKESHORE_NAMESPACE; default: default].",
    )
    p.add_argument("--provider", required=True, type=_name, help="The provider this host claims.")
    p.add_argument("--queues", default="", type=_queues, help="Comma-separated queues to serve.")
    p.add_argument(
        "--instance-id",
        default=os.environ.get("NYMPH_INSTANCE_ID") or socket.gethostname(),
        help="This host's id in the claim [env var: NYMPH_INSTANCE_ID; default: the host name].",
    )
    p.add_argument(
        "--identity",
        type=_identity,
        default=os.environ.get("NYMPH_PROVIDER_ID") or None,
        help="The provider's identity (provider.json id): claims count for it alone.",
    )
    p.add_argument("--poll-wait", type=float, default=20.0, help="Long-poll seconds (≤60).")
    p.add_argument("--max-backoff", type=float, default=15.0, help="Longest retry delay.")
    p.add_argument(
        "--heartbeat", type=float, default=None, help="Heartbeat seconds (default: server's)."
    )
    p.add_argument("--workdir", default=None, help="Where commands run (default: cwd).")
    p.add_argument("--pid-file", type=Path, default=None, help="Write this daemon's pid here.")
    p.add_argument(
        "--log-format",
        choices=("text", "json"),
        default=None,
        help="text lines or JSON lines on stderr [env var: NYMPH_LOG_FORMAT; default: text].",
    )
    p.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default=None,
        help="Least severe record logged [env var: NYMPH_LOG_LEVEL; default: info].",
    )
    return p


def token_loader(args: argparse.Namespace) -> Callable[[], str | None]:
    def load() -> str | None:
        path: Path | None = args.token_file
        if path is None and os.environ.get("LAKESHORE_TOKEN"):
            return os.environ["LAKESHORE_TOKEN"].strip() or None
        if path is None and os.environ.get("LAKESHORE_TOKEN_FILE"):
            path = Path(os.environ["LAKESHORE_TOKEN_FILE"])
        if path is None:
            return None
        try:
            return path.expanduser().read_text(encoding="utf-8").strip() or None
        except (OSError, ValueError):  # unreadable or not text: no token (reported by main)
            return None

    return load


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from ..logsetup import configure

    try:
        configure("NYMPH", fmt=args.log_format, level=args.log_level)
    except ValueError as exc:
        print(f"nymph: error: {exc}", file=sys.stderr)
        return 2
    if not args.server:
        print("nymph: error: --server (or LAKESHORE_URL) is required", file=sys.stderr)
        return 2
    if not 0 <= args.poll_wait <= 60:
        print("nymph: error: --poll-wait must be between 0 and 60", file=sys.stderr)
        return 2
    load = token_loader(args)
    token = load()
    credentials = _credentials(args, load)
    if token is None and not (credentials is not None and credentials.valid()):
        where = args.token_file or "LAKESHORE_TOKEN / LAKESHORE_TOKEN_FILE"
        print(f"nymph: error: no token (read from {where})", file=sys.stderr)
        return 2

    from dreamlake import __version__

    from ..client import Client
    from .daemon import SUSPENDED_EXIT, Daemon, DaemonConfig, log
    from .runner import ProcessRunner
    from .tracing import flush, install

    traced = install()  # OpenTelemetry spans, only when OTEL_EXPORTER_OTLP_ENDPOINT is set

    servers = [u.strip().rstrip("/") for u in args.server.split(",") if u.strip()]
    if not servers:
        print("nymph: error: --server (or LAKESHORE_URL) is required", file=sys.stderr)
        return 2
    if any(u.startswith("https:") for u in servers):
        from ..tlsclient import TrustProblem, client_context

        try:
            client_context(args.ca)  # a CA that cannot be read stops here, not in every retry
        except TrustProblem as exc:
            advice = (  # the daemon reads no .dreamrc: its CA comes from --ca or the variable
                "give --ca (or LAKESHORE_CA) the CA certificate lakeshore serve printed at "
                "start (<data dir>/tls/ca.crt); connect installs it as ca.crt beside the daemon"
            )
            print(f"nymph: error: {exc}; {advice}", file=sys.stderr)
            return 2
    # keep-alive: the long-poll and the heartbeats each keep their connection open
    client = Client(
        url=servers[0], token=token, namespace=args.namespace, keep_alive=True, ca=args.ca
    )
    config = DaemonConfig(
        provider=args.provider,
        queues=args.queues,
        instance_id=args.instance_id,
        host=socket.gethostname(),
        version=__version__,
        poll_wait=args.poll_wait,
        max_backoff=max(0.5, args.max_backoff),
        heartbeat_seconds=args.heartbeat,
        identity=args.identity,
        servers=servers[1:],
    )
    daemon = Daemon(
        client, config, ProcessRunner(args.workdir), token_loader=load, credentials=credentials
    )

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        daemon.stop.set()

    def on_suspend(signum: int, _frame: FrameType | None) -> None:
        daemon.draining.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGUSR1, on_suspend)
    if args.pid_file is not None:
        _write_pid(args.pid_file)
    log(
        f"starting: provider {args.provider!r}, server {client.url}, instance {args.instance_id}"
        + (" (tracing its requests)" if traced else "")
    )
    threads = daemon.start()
    try:
        while not daemon.stop.wait(0.2):
            if daemon.draining.is_set():
                daemon.drain(threads)
                log("suspended")
                return SUSPENDED_EXIT
        log("stopping")
        daemon.shutdown(threads)
        return 0
    finally:
        if traced:
            flush()
        if args.pid_file is not None:
            _remove_pid(args.pid_file)


def _credentials(args: argparse.Namespace, load: Callable[[], str | None]) -> Any:
    """The daemon's certificate folder when it speaks TLS to the control plane
    (``--cert-dir``, else the token file's folder), or None: bearer tokens only."""
    if not any(u.strip().startswith("https:") for u in (args.server or "").split(",")):
        return None
    folder = args.cert_dir
    if folder is None:
        token_file = args.token_file or os.environ.get("LAKESHORE_TOKEN_FILE")
        if not token_file or (os.environ.get("LAKESHORE_TOKEN") and args.token_file is None):
            return None
        folder = Path(token_file).expanduser().parent
    from .credentials import Credentials

    return Credentials(
        Path(folder).expanduser(), args.namespace, args.provider, load, args.instance_id
    )


def _write_pid(path: Path) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(f"{os.getpid()}\n", encoding="utf-8")
    os.replace(tmp, path)


def _remove_pid(path: Path) -> None:
    try:
        if path.read_text(encoding="utf-8").strip() == str(os.getpid()):
            path.unlink()
    except OSError:
        pass


if __name__ == "__main__":
    sys.exit(main())
