"""The Terraform decision scan's answer, remembered per provider folder.

``status`` runs the scan on every call, and on an unchanged folder the answer is
the same; computing it means importing the variable-file reader and the
expression evaluator, a large share of what ``status`` costs. So the answer (the
list of blocking decisions) is kept in the user's cache (:mod:`..usercache`, kind
``scan``), one entry per provider folder and installed engine, under a fingerprint
of everything the scan reads:

* every file in the folders that hold the template's decision files but the
  saved plans, state and records plan and apply write there (name, size,
  inode, modification and change times, and the hash of its text): the variable
  files Terraform loads and the ``*.tf`` files whose ``variable`` blocks judge the
  values;
* the template's decisions (key, variable, file, placeholder, why, probe);
* the code it runs (the scan's modules and the engine modules they read files
  and build answers with, by size and modification time), so a changed engine
  never reads an older engine's answer.

Any difference is a miss and the scan runs; the usercache's rules apply (a
failing scan never kept). A file's hash lets an answer be kept right after an
edit (``set``, then ``plan``, then ``apply`` each find the answer the one before
computed): a rewrite within one tick of the file system's clock changes the hash
where it may not change the times, which is why the usercache otherwise keeps
nothing while a file is fresh. A file too large to hash
(:data:`CONTENT_LIMIT`) still waits for that window to pass.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from ..contract.result import Blocking
from ..settings import usercache
from ..world.paths import ProviderPaths
from ..world.vendors import Template

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from typing import Any

_CODE = Path(__file__).resolve().parent

# What plan, apply and destroy write beside the variable files, which the scan never
# reads: a plan in an agent's loop rewrites them on every run, and the answer stays.
RUN_ARTIFACTS = frozenset(
    {
        "tfplan",
        "tfplan.meta.json",
        "tfplan.init.json",
        "tfplan.ahead.json",
        "destroy.tfplan",
        "drift.tfplan",
        "tfplan.drift.json",
        "terraform.tfstate",
        "terraform.tfstate.backup",
        ".terraform.tfstate.lock.info",
        ".terraform.lock.hcl",
    }
)


CONTENT_LIMIT = 1 << 20  # bytes: a larger file is known by its times alone


def _with_content(folder: Path, entry: list[Any]) -> list[Any]:
    """``entry`` (:func:`usercache.listing`'s) and the hash of the file's text, when
    it is a regular file of at most :data:`CONTENT_LIMIT` bytes."""
    import stat

    from ..settings.digest import sha256  # no OpenSSL to load

    if entry[1] > CONTENT_LIMIT:
        return entry
    try:
        fd = os.open(folder / entry[0], os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return entry
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return entry
        data = f.read(CONTENT_LIMIT + 1)
    if len(data) > CONTENT_LIMIT:
        return entry
    return [*entry, sha256(data).hexdigest()]


_STATS_LEN = 5  # name, size, inode, modification and change times


def _racy(entries: list[list[Any]]) -> list[list[Any]]:
    """The entries known by their times alone (no hash): what must be settled."""
    return [e for e in entries if len(e) == _STATS_LEN]


def _run_artifact(name: str) -> bool:
    """A file plan, apply or destroy writes: a saved plan (``*.tfplan``, as the
    scaffold's ``.gitignore`` has it: the plan ``plan`` starts ahead is one) or a record."""
    return name in RUN_ARTIFACTS or name.endswith(".tfplan")


def fingerprint(paths: ProviderPaths, template: Template) -> dict[str, Any] | None:
    """What the scan of ``paths`` against ``template`` reads, as comparable data;
    ``None`` when a folder cannot be listed (then nothing is remembered)."""
    folders = sorted({str((paths.dir / d.file).absolute().parent) for d in template.decisions})
    files = {}
    for f in folders:
        listing = usercache.listing(Path(f))
        if listing is None:
            return None
        files[f] = [_with_content(Path(f), e) for e in listing if not _run_artifact(e[0])]
    decisions = [
        [d.key, d.var, d.file, repr(d.placeholder), d.why, d.probe] for d in template.decisions
    ]
    engine = _CODE.parent
    code = usercache.code_stats(
        _CODE,
        _CODE / "expr",
        *(
            engine / f
            for f in (
                "contract/result.py",
                "settings/hcl.py",
                "world/paths.py",
                "settings/readers.py",
                "world/vendors.py",
            )
        ),
    )
    return {"files": files, "decisions": decisions, "code": code}


def remembered(
    paths: ProviderPaths, template: Template, compute: Callable[[], list[Blocking]]
) -> list[Blocking]:
    """``compute()``'s answer for this folder, from the cache when nothing it reads
    has changed since it was remembered."""
    fp = fingerprint(paths, template)
    if fp is None:
        return compute()
    # One entry per provider folder and installed engine: two installs (a wheel and
    # an editable checkout) asking about one folder keep an answer each.
    key = f"{paths.dir.absolute()}\0{_CODE}"
    stats = [s for listing in fp["files"].values() for s in listing]
    got = usercache.remembered(
        "scan",
        key,
        fp,
        lambda: [b.model_dump() for b in compute()],
        keep=usercache.settled(_racy(stats)),
    )
    return [Blocking(**b) for b in got]


__all__ = ["fingerprint", "remembered"]
