"""Secret kinds and marker resolution — the in-process step that sees plaintext.

``resolve_markers`` swaps every ``{"$secret": name}`` for the decrypted value. It is
called only inside the launch path, on the server, right before a launcher is
called; its output is never returned by a route, logged, or put in an error.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from .kwargs import is_secret_marker

SECRET_KINDS: tuple[str, ...] = ("generic", "aws_keypair", "ssh_key", "token", "password")
SECRET_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
SECRET_NAME_RULE = "^[A-Za-z0-9][A-Za-z0-9_.-]*$"


class SecretValueError(ValueError):
    """A secret value that does not fit its kind (message never echoes the value)."""


class UnknownSecret(LookupError):
    def __init__(self, name: str, path: str) -> None:
        super().__init__(f"kwarg {path} names secret {name!r}, which does not exist")
        self.name = name
        self.path = path


def validate_value(kind: str, value: str) -> None:
    if kind not in SECRET_KINDS:
        raise SecretValueError(f"unknown secret kind {kind!r}; one of {', '.join(SECRET_KINDS)}")
    if value == "":
        raise SecretValueError("a secret value cannot be empty")
    if kind == "aws_keypair":
        key_id, sep, secret = value.partition(":")
        if not sep or not key_id.strip() or not secret.strip():
            raise SecretValueError(
                "an aws_keypair secret is stored as <access_key_id>:<secret_access_key>"
            )


def expand(kind: str, plaintext: str) -> Any:
    """The value a marker becomes: ``aws_keypair`` -> ``{accessKeyId, secretAccessKey}``,
    every other kind its UTF-8 plaintext."""
    if kind == "aws_keypair":
        key_id, _, secret = plaintext.partition(":")
        return {"accessKeyId": key_id.strip(), "secretAccessKey": secret.strip()}
    return plaintext


SecretLookup = Callable[[str], tuple[str, str] | None]
"""name -> (kind, plaintext), or None when the namespace holds no such secret."""


def resolve_markers(value: Any, lookup: SecretLookup, path: str = "") -> Any:
    """A copy of ``value`` with every secret marker replaced by its expanded plaintext.
    Raises ``UnknownSecret`` (naming the kwarg path and secret, never a value)."""
    if is_secret_marker(value):
        name = value["$secret"]
        found = lookup(name)
        if found is None:
            raise UnknownSecret(name, path or "(root)")
        kind, plaintext = found
        return expand(kind, plaintext)
    if isinstance(value, Mapping):
        return {
            k: resolve_markers(v, lookup, f"{path}.{k}" if path else str(k))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [resolve_markers(v, lookup, f"{path}[{i}]") for i, v in enumerate(value)]
    return value
