"""Server settings: flags first, then ``LAKESHORE_*`` environment, then defaults."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7878
DEFAULT_LIVE_SECONDS = 30.0
DEFAULT_MAX_BODY_BYTES = 1024 * 1024
MAX_WAIT_SECONDS = 60.0
ADMIN_TOKEN_FILE = "admin.token"
DEFAULT_POOL_SIZE = 32
DEFAULT_SHUTDOWN_GRACE_SECONDS = 2.0
DEFAULT_MAX_ROWS = 10_000
DEFAULT_MAX_SECRETS = 1_000
DEFAULT_MAX_KWARGS_BYTES = 64 * 1024
DEFAULT_MAX_JSON_DEPTH = 32
DEFAULT_GC_FREEZE_SECONDS = 1.0
DEFAULT_BACKLOG = 16384  # the kernel caps it to net.core.somaxconn (4096 on Linux 5.4+)
DEFAULT_LISTENERS = 8
DEFAULT_MAX_PENDING = 2000
DEFAULT_MAX_QUEUE_SECONDS = 3.0  # well inside a daemon's 10 s request timeout
MIN_KEEP_ALIVE_SECONDS = 65.0  # longer than the longest long-poll (MAX_WAIT_SECONDS)


def _env_bool(name: str) -> bool | None:
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return None
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{name}={raw!r} is not true or false")


def default_data_dir() -> Path:
    """``LAKESHORE_DATA_DIR`` or ``platformdirs.user_data_dir("lakeshore")``."""
    env = os.environ.get("LAKESHORE_DATA_DIR")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("lakeshore"))


@dataclass
class Settings:
    data_dir: Path = field(default_factory=default_data_dir)
    db_url: str | None = None  # None: SQLite file in data_dir
    live_seconds: float = DEFAULT_LIVE_SECONDS
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    default_namespace: str = "default"
    # One knob for concurrency: this many worker threads run blocking route code,
    # and the database pool holds this many connections plus POOL_SPARE (the
    # heartbeat writer, start-up), so a thread never waits for a connection and a
    # request never holds a connection while it waits for a thread.
    pool_size: int = DEFAULT_POOL_SIZE
    # The secret key: the key itself, or a file holding it; else <data dir>/secret.key.
    secret_key: str | None = field(default=None, repr=False)
    secret_key_file: Path | None = None
    # None: what the database says (new installs: off; older installs: on).
    unscoped_listings: bool | None = None
    # Per-namespace limits (each namespace gets these).
    max_rows: int = DEFAULT_MAX_ROWS
    max_secrets: int = DEFAULT_MAX_SECRETS
    max_kwargs_bytes: int = DEFAULT_MAX_KWARGS_BYTES
    max_json_depth: int = DEFAULT_MAX_JSON_DEPTH
    # Move what is alive out of the cycle collector's reach this often (see
    # server/gcpolicy.py); 0 keeps Python's default collector.
    gc_freeze_seconds: float = DEFAULT_GC_FREEZE_SECONDS
    # A fleet's connections (see server/fleet/ and docs/controlplane.md): the listen
    # backlog asked of the kernel for each listening socket; how long an idle
    # keep-alive connection stays open (None: three heartbeat intervals, at least
    # MIN_KEEP_ALIVE_SECONDS); connections taken before answering 503 (None: from
    # the open-files limit, see shedding.connection_budget; 0: never); requests in
    # flight, long-polls aside, before answering 503 (0: never).
    backlog: int = DEFAULT_BACKLOG
    # listening sockets on the port, in one SO_REUSEPORT group (see fleet/serving.py)
    listeners: int = DEFAULT_LISTENERS
    # With TLS, processes that do the handshakes and relay to the event loop (see
    # server/edge/); None or 0: TLS on the event loop itself.
    tls_processes: int | None = None
    keep_alive_seconds: float | None = None
    max_connections: int | None = None
    max_pending: int = DEFAULT_MAX_PENDING
    # ... or once the oldest of them has waited this long (0: never)
    max_queue_seconds: float = DEFAULT_MAX_QUEUE_SECONDS
    # Retry-After of a 503 (None: drawn at random, see shedding.py)
    retry_after_seconds: int | None = None
    # Also serve /healthz and /readyz on this port, off the event loop (see health.py);
    # None: on the main port only.
    probe_port: int | None = None
    # On SIGTERM, how long requests in flight get to finish (held polls are answered
    # 503 at once) before uvicorn cancels them, which answers 500. Answering 10,000
    # held polls takes the event loop seconds: a server with such a fleet wants more,
    # but uvicorn waits the whole grace for any request still in flight.
    shutdown_grace_seconds: float = DEFAULT_SHUTDOWN_GRACE_SECONDS
    # An EC2 or GCE launch with no credentials secret may use the server's own cloud
    # credentials (its AWS chain, Google's application-default credentials): the
    # operator's opt-in, off by default, as any namespace could then launch on them.
    launch_server_credentials: bool = False

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        """Settings with ``LAKESHORE_DB`` / ``LAKESHORE_DATA_DIR`` / ``LAKESHORE_LIVE_SECONDS``
        filled in where ``overrides`` leaves them unset (None)."""
        values: dict[str, object] = {k: v for k, v in overrides.items() if v is not None}
        if "db_url" not in values and os.environ.get("LAKESHORE_DB"):
            values["db_url"] = os.environ["LAKESHORE_DB"]
        if "live_seconds" not in values and os.environ.get("LAKESHORE_LIVE_SECONDS"):
            values["live_seconds"] = float(os.environ["LAKESHORE_LIVE_SECONDS"])
        env_map = {
            "pool_size": ("LAKESHORE_POOL_SIZE", int),
            "secret_key": ("LAKESHORE_SECRET_KEY", str),
            "secret_key_file": ("LAKESHORE_SECRET_KEY_FILE", Path),
            "max_rows": ("LAKESHORE_MAX_ROWS", int),
            "max_secrets": ("LAKESHORE_MAX_SECRETS", int),
            "max_kwargs_bytes": ("LAKESHORE_MAX_KWARGS_BYTES", int),
            "max_json_depth": ("LAKESHORE_MAX_JSON_DEPTH", int),
            "gc_freeze_seconds": ("LAKESHORE_GC_FREEZE_SECONDS", float),
            "backlog": ("LAKESHORE_BACKLOG", int),
            "listeners": ("LAKESHORE_LISTENERS", int),
            "tls_processes": ("LAKESHORE_TLS_PROCESSES", int),
            "keep_alive_seconds": ("LAKESHORE_KEEP_ALIVE_SECONDS", float),
            "max_connections": ("LAKESHORE_MAX_CONNECTIONS", int),
            "max_pending": ("LAKESHORE_MAX_PENDING", int),
            "max_queue_seconds": ("LAKESHORE_MAX_QUEUE_SECONDS", float),
            "retry_after_seconds": ("LAKESHORE_RETRY_AFTER_SECONDS", int),
            "probe_port": ("LAKESHORE_PROBE_PORT", int),
            "shutdown_grace_seconds": ("LAKESHORE_SHUTDOWN_GRACE_SECONDS", float),
        }
        for key, (env, cast) in env_map.items():
            if key not in values and os.environ.get(env, "").strip():
                values[key] = cast(os.environ[env].strip())
        if "unscoped_listings" not in values:
            values["unscoped_listings"] = _env_bool("LAKESHORE_UNSCOPED_LISTINGS")
        if "launch_server_credentials" not in values:
            own = _env_bool("LAKESHORE_LAUNCH_SERVER_CREDENTIALS")
            if own is not None:
                values["launch_server_credentials"] = own
        if "data_dir" in values:
            values["data_dir"] = Path(str(values["data_dir"])).expanduser()
        return cls(**values)  # type: ignore[arg-type]

    @property
    def admin_token_file(self) -> Path:
        return self.data_dir / ADMIN_TOKEN_FILE

    @property
    def flush_seconds(self) -> float:
        """How often coalesced heartbeats are written: a quarter of the live bound,
        at most one second."""
        return max(0.05, min(1.0, self.live_seconds / 4))

    @property
    def heartbeat_seconds(self) -> float:
        """How often a daemon should heartbeat: three beats per live bound."""
        return max(0.2, self.live_seconds / 3)

    @property
    def keep_alive(self) -> float:
        """Seconds an idle keep-alive connection stays open: longer than the
        heartbeat interval (a busy daemon's heartbeat connection idles that long
        between beats) and than the longest long-poll."""
        if self.keep_alive_seconds is not None:
            return self.keep_alive_seconds
        return max(MIN_KEEP_ALIVE_SECONDS, 3 * self.heartbeat_seconds)

    def database_url(self) -> str:
        from ..db import sqlite_url

        return self.db_url or sqlite_url(self.data_dir)
