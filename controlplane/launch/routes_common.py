"""What the launch and queue routes share."""

from __future__ import annotations

import os

from fastapi import Request

PUBLIC_URL_ENV = "LAKESHORE_PUBLIC_URL"


def server_url(request: Request) -> str:
    """The URL a launched instance reaches this control plane at: ``LAKESHORE_PUBLIC_URL``
    when set (what ``serve`` is behind), else the URL this request came in on."""
    return (os.environ.get(PUBLIC_URL_ENV) or str(request.base_url)).rstrip("/")
