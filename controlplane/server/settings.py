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

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        """Settings with ``LAKESHORE_DB`` / ``LAKESHORE_DATA_DIR`` / ``LAKESHORE_LIVE_SECONDS``
        filled in where ``overrides`` leaves them unset (None)."""
        values: dict[str, object] = {k: v for k, v in overrides.items() if v is not None}
        if "db_url" not in values and os.environ.get("LAKESHORE_DB"):
            values["db_url"] = os.environ["LAKESHORE_DB"]
        if "live_seconds" not in values and os.environ.get("LAKESHORE_LIVE_SECONDS"):
            values["live_seconds"] = float(os.environ["LAKESHORE_LIVE_SECONDS"])
        if "data_dir" in values:
            values["data_dir"] = Path(str(values["data_dir"])).expanduser()
        return cls(**values)  # type: ignore[arg-type]

    @property
    def admin_token_file(self) -> Path:
        return self.data_dir / ADMIN_TOKEN_FILE

    @property
    def heartbeat_seconds(self) -> float:
        """How often a daemon should heartbeat: three beats per live bound."""
        return max(0.2, self.live_seconds / 3)

    def database_url(self) -> str:
        from ..db import sqlite_url

        return self.db_url or sqlite_url(self.data_dir)
