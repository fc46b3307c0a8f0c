"""The Terraform decision scan's answer, remembered per provider folder.

``status`` runs the scan on every call, and on an unchanged folder the answer is
the same; computing it means importing the variable-file reader and the
expression evaluator, a large share of what ``status`` costs. So the answer (the
list of blocking decisions) is kept in the user's cache folder
(:mod:`..usercache`, kind ``scan``), one small JSON file per provider folder and
installed engine, under a fingerprint of everything the scan reads:

* every file in the folders that hold the template's decision files (name, size,
  inode, modification and change times): the variable files Terraform loads and
  the ``*.tf`` files whose ``variable`` blocks judge the values;
* the template's decisions (key, variable, file, placeholder, why, probe);
* the scan's own code (each module's name, size and modification time), so a
  changed engine never reads an older engine's answer.

Any difference is a miss and the scan runs. An answer is not written while a file
it read was changed within the last ``RACY_SECONDS`` (git's "racy" rule): a
rewrite of the same size within one tick of the file system's clock could
otherwise keep an old answer. A scan that fails (a variable file that does not
parse) is never remembered. Reading or writing the cache never fails a run.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..contract import Blocking
from ..paths import ProviderPaths
from ..vendors import Template

# A file changed this recently may change again within the clock's resolution.
RACY_SECONDS = 2.0
_CODE = Path(__file__).resolve().parent


def _listing(folder: Path) -> list[list[Any]] | None:
    out: list[list[Any]] = []
    try:
        with os.scandir(folder) as it:
            for e in it:
                st = e.stat(follow_symlinks=True) if e.is_file() else None
                if st is not None:
                    out.append([e.name, st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns])
    except OSError:
        return None
    out.sort()
    return out


def _code() -> list[list[Any]]:
    out: list[list[Any]] = []
    for folder in (_CODE, _CODE / "expr", _CODE.parent):
        for e in _listing(folder) or ():
            if e[0].endswith(".py"):
                out.append([str(folder), e[0], e[1], e[3]])
    return out


def fingerprint(paths: ProviderPaths, template: Template) -> dict[str, Any] | None:
    """What the scan of ``paths`` against ``template`` reads, as comparable data;
    ``None`` when a folder cannot be listed (then nothing is remembered)."""
    folders = sorted({str((paths.dir / d.file).absolute().parent) for d in template.decisions})
    files = {}
    for f in folders:
        listing = _listing(Path(f))
        if listing is None:
            return None
        files[f] = listing
    decisions = [
        [d.key, d.var, d.file, repr(d.placeholder), d.why, d.probe] for d in template.decisions
    ]
    return {"files": files, "decisions": decisions, "code": _code()}


def _entry(paths: ProviderPaths) -> Path | None:
    from ..usercache import folder

    base = folder("scan")
    if base is None:
        return None
    import zlib

    # One entry per provider folder and installed engine: two installs (a wheel and
    # an editable checkout) asking about one folder keep an answer each.
    key = f"{paths.dir.absolute()}\0{_CODE}"
    return base / f"{zlib.crc32(key.encode()):08x}-{len(key)}.json"


def _racy(fp: dict[str, Any]) -> bool:
    newest = max((max(e[3], e[4]) for listing in fp["files"].values() for e in listing), default=0)
    return newest / 1e9 > time.time() - RACY_SECONDS


def remembered(
    paths: ProviderPaths, template: Template, compute: Callable[[], list[Blocking]]
) -> list[Blocking]:
    """``compute()``'s answer for this folder, from the cache when nothing it reads
    has changed since it was remembered."""
    entry = _entry(paths)
    fp = fingerprint(paths, template) if entry is not None else None
    if entry is None or fp is None:
        return compute()
    key = str(paths.dir.absolute())
    with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
        data = json.loads(entry.read_text(encoding="utf-8"))
        if data["dir"] == key and data["fingerprint"] == fp:
            return [Blocking(**b) for b in data["blocking"]]
    blocking = compute()
    if not _racy(fp):
        with contextlib.suppress(OSError, TypeError, ValueError):
            from ..fsutil import atomic_write

            body = {"dir": key, "fingerprint": fp, "blocking": [b.model_dump() for b in blocking]}
            atomic_write(entry, json.dumps(body))
    return blocking


__all__ = ["RACY_SECONDS", "fingerprint", "remembered"]
