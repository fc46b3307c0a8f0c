"""SHA-256 without ``hashlib``: the interpreter's own implementation (``_sha2`` from
Python 3.12, ``_sha256`` before), whose digests are the same. Importing ``hashlib``
loads and initialises OpenSSL's library, 6–15 ms of a ``plan``, ``apply`` or
``status`` run that hashes a few small files (the saved plan's inputs, the decision
scan's files, what ``init`` read); a build without the built-in module falls back
to ``hashlib``."""

from __future__ import annotations

from typing import Any

# Chosen once: a module that is not there is looked for again on every import of it
# (about 0.35 ms here, each time), and a plan hashes some twenty files.
try:
    from _sha2 import sha256 as _new  # type: ignore[import-not-found,unused-ignore]
except ImportError:
    try:
        from _sha256 import sha256 as _new  # type: ignore[import-not-found,no-redef,unused-ignore]
    except ImportError:
        from hashlib import sha256 as _new


def sha256(data: bytes = b"") -> Any:
    """A new SHA-256 object (``update``, ``hexdigest``), as ``hashlib.sha256(data)``."""
    return _new(data)


__all__ = ["sha256"]
