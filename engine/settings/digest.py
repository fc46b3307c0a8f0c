"""SHA-256 without ``hashlib``: the interpreter's own implementation (``_sha2`` from
Python 3.12, ``_sha256`` before), whose digests are the same. Importing ``hashlib``
loads and initialises OpenSSL's library, 6–15 ms of a ``plan``, ``apply`` or
``status`` run that hashes a few small files (the saved plan's inputs, the decision
scan's files, what ``init`` read); a build without the built-in module falls back
to ``hashlib``."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from typing import Any

# Chosen once, by the interpreter's version: a module that is not there is looked for
# again on every import of it (about 0.35 ms here, each time), and a plan hashes some
# twenty files; nor is the one that is not there looked for first (``_sha2`` on 3.11).
try:
    if sys.version_info >= (3, 12):
        from _sha2 import sha256 as _new  # type: ignore[import-not-found,unused-ignore]
    else:
        from _sha256 import sha256 as _new  # type: ignore[import-not-found,no-redef,unused-ignore]
except ImportError:
    from hashlib import sha256 as _new  # type: ignore[assignment,unused-ignore]


def sha256(data: bytes = b"") -> Any:
    """A new SHA-256 object (``update``, ``hexdigest``), as ``hashlib.sha256(data)``."""
    return _new(data)


__all__ = ["sha256"]
