"""Logging for the long-running processes (``lakeshore serve``, ``nymph``): one place
that points the standard ``logging`` tree at stderr, as text or as JSON lines.

Standard library only: the daemon imports it on hosts that have nothing else.

* text (default): ``2026-01-01T00:00:00Z nymph: message`` — one line per record.
* json: ``{"time": …, "level": "info", "logger": "nymph", "message": …}`` per line,
  for a log shipper.

The format comes from the ``--log-format`` flag, else ``<PREFIX>_LOG_FORMAT``
(``LAKESHORE_LOG_FORMAT``, ``NYMPH_LOG_FORMAT``); the level from ``--log-level``, else
``<PREFIX>_LOG_LEVEL``, else ``info``.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from typing import Any

FORMATS = ("text", "json")
LEVELS = ("debug", "info", "warning", "error")


class TextFormatter(logging.Formatter):
    def __init__(self, label: str | None = None) -> None:
        super().__init__()
        self.label = label

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(record.created))
        who = self.label or record.name
        line = f"{stamp} {who}: {record.getMessage()}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object per line; ``extra={"fields": {...}}`` adds keys."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(record.created)),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            doc.update(fields)
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str)


def resolve(prefix: str, fmt: str | None, level: str | None) -> tuple[str, str]:
    """The format and level in force: the flag, else the environment, else defaults.
    Unknown values are a ``ValueError`` naming what is allowed."""
    fmt = (fmt or os.environ.get(f"{prefix}_LOG_FORMAT") or "text").strip().lower()
    level = (level or os.environ.get(f"{prefix}_LOG_LEVEL") or "info").strip().lower()
    if fmt not in FORMATS:
        raise ValueError(f"log format {fmt!r}: use one of {', '.join(FORMATS)}")
    if level not in LEVELS:
        raise ValueError(f"log level {level!r}: use one of {', '.join(LEVELS)}")
    return fmt, level


def configure(
    prefix: str, *, fmt: str | None = None, level: str | None = None, label: str | None = None
) -> tuple[str, str]:
    """Send every record to stderr in the chosen format (replacing earlier handlers on
    the root logger, so uvicorn's loggers come through the same one)."""
    fmt, level = resolve(prefix, fmt, level)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter(label))
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(level.upper())
    return fmt, level
