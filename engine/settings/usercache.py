"""The user's cache folder for what the engine can compute again at will, and the
one rule for remembering an answer there.

``$DREAMLAKE_CACHE_DIR`` moves it and ``DREAMLAKE_CACHE_DIR=off`` turns every cache
off; otherwise it is ``$XDG_CACHE_HOME/dreamlake`` (``~/.cache/dreamlake``). Nothing
kept here is ever the only copy: deleting the folder costs time, not data.

:func:`remembered` keeps one answer per key under a fingerprint of everything the
answer was computed from; any difference is a miss. Fingerprints name files by
size, inode, modification and change times (:func:`file_stats`), so an answer is
not written while one of them was changed within the last ``RACY_SECONDS`` (git's
"racy" rule: a rewrite of the same size within one tick of the file system's clock
could otherwise keep an old answer). A computation that raises is never
remembered, and reading or writing the cache never fails a run.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from typing import Any

# A file changed this recently may change again within the clock's resolution.
RACY_SECONDS = 2.0


def folder(kind: str) -> Path | None:
    """The folder of one kind of cached answer (``hcl``, ``scan``, ``dreamrc``), or
    ``None`` when caching is off."""
    env = os.environ.get("DREAMLAKE_CACHE_DIR")
    if env == "off":
        return None
    if env:
        return Path(env) / kind
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dreamlake" / kind


def file_stats(path: Path | str) -> list[Any] | None:
    """``[size, inode, mtime_ns, ctime_ns]`` of a file, ``None`` when it has none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns]


def listing(folder: Path) -> list[list[Any]] | None:
    """Every file of ``folder`` as ``[name, *file_stats]``, by name; ``None`` when
    the folder cannot be listed."""
    out: list[list[Any]] = []
    try:
        with os.scandir(folder) as it:
            for e in it:
                if e.is_file():
                    st = e.stat()
                    out.append([e.name, st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns])
    except OSError:
        return None
    out.sort()
    return out


def code_stats(*where: Path) -> list[list[Any]]:
    """The code an answer was computed with: each ``.py`` file named, and those of
    each folder named, by path, size and modification time, so an engine whose code
    changed never reads an older one's answers."""
    out: list[list[Any]] = []
    for path in where:
        if path.suffix == ".py":
            st = file_stats(path)
            out.append([str(path), st[0], st[2]] if st else [str(path), None])
            continue
        for e in listing(path) or ():
            if e[0].endswith(".py"):
                out.append([str(path / e[0]), e[1], e[3]])
    return out


def settled(stats: list[list[Any]]) -> bool:
    """Whether none of these ``file_stats`` changed within ``RACY_SECONDS``."""
    newest = max((max(s[-2], s[-1]) for s in stats), default=0)
    return newest / 1e9 <= time.time() - RACY_SECONDS


def remembered(
    kind: str,
    key: str,
    fingerprint: Any,
    compute: Callable[[], Any],
    *,
    keep: bool | Callable[[Any], bool] = True,
) -> Any:
    """``compute()``'s answer (JSON data) for ``key``, from the cache when it was
    remembered under an equal ``fingerprint``. ``keep=False``: compute, and do not
    remember (a fingerprint whose files are not settled); a callable decides from
    the answer."""
    base = folder(kind)
    if base is None:
        return compute()
    from .digest import sha256  # loaded already; zlib was one more shared library to load

    entry = base / f"{sha256(key.encode()).hexdigest()[:8]}-{len(key)}.json"
    # A cache entry is the engine's own file: whatever is wrong with it (corrupt,
    # nested too deep, a FIFO or a device in its place) means "compute it again".
    with contextlib.suppress(OSError, ValueError, TypeError, KeyError, RecursionError):
        from .readers import read_json

        data = read_json(entry)
        if data["key"] == key and data["fingerprint"] == fingerprint:
            return data["value"]
    value = compute()
    if keep(value) if callable(keep) else keep:
        with contextlib.suppress(OSError, TypeError, ValueError):
            from .fsutil import atomic_write

            body = {"key": key, "fingerprint": fingerprint, "value": value}
            atomic_write(entry, json.dumps(body), durable=False)
    return value


__all__ = [
    "RACY_SECONDS",
    "code_stats",
    "file_stats",
    "folder",
    "listing",
    "remembered",
    "settled",
]
