"""HCL parsing with a content-addressed cache.

python-hcl2 costs close to a second per process (import plus grammar load), which
``status`` would pay on every run. Parsed documents are plain JSON, so they are
cached under the user's cache folder keyed by the SHA-256 of the text: an unchanged
file is never parsed twice, and a changed one can never hit a stale entry.
``DREAMLAKE_CACHE_DIR`` moves the cache; ``DREAMLAKE_CACHE_DIR=off`` disables it.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

# Bump when the parser's output shape changes (python-hcl2 major versions differ).
PARSER_TAG = "hcl2-8.1"  # .1: entries name their key


def loads(text: str) -> dict[str, Any]:
    """``hcl2.loads(text)``, memoized on disk by content. Text nested past the
    parser's reach is a ``readers.FileProblem`` (a ValueError), not a crash."""
    from .readers import MAX_TEXT, FileProblem, check_hcl_text

    if len(text) > MAX_TEXT:
        raise FileProblem(None, f"larger than {MAX_TEXT // (1024 * 1024)} MiB")
    from .digest import sha256
    from .usercache import folder as cache_folder

    folder = cache_folder("hcl")
    key = sha256(f"{PARSER_TAG}\0{text}".encode()).hexdigest()
    entry = folder / f"{key}.json" if folder else None
    if entry is not None:
        # The cache is ours: a corrupt entry (or a FIFO or device in its place) is
        # parsed again, never reported as a fault of the user's file.
        with contextlib.suppress(OSError, ValueError, RecursionError):
            from .readers import read_json

            cached = read_json(entry)
            # an entry names the text it was parsed from: anything else (a
            # well-formed document that is not ours included) is parsed again
            if (
                isinstance(cached, dict)
                and cached.get("key") == key
                and isinstance(cached.get("doc"), dict)
            ):
                return cached["doc"]  # type: ignore[no-any-return]
    import hcl2

    check_hcl_text(text, None)  # only on a cache miss: a cached text parsed before
    try:
        data: dict[str, Any] = hcl2.loads(text)
    except RecursionError:
        raise FileProblem(None, "nested too deeply to parse") from None
    if entry is not None:
        with contextlib.suppress(OSError, TypeError, ValueError):
            from .fsutil import atomic_write

            atomic_write(entry, json.dumps({"key": key, "doc": data}), durable=False)
    return data
