"""Bearer tokens: generated once, shown once, stored as SHA-256."""

from __future__ import annotations

import hashlib
import secrets

PREFIX = "lks_"


def new_token() -> str:
    return PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()
