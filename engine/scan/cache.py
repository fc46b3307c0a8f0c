"""The Terraform decision scan's answer, remembered per provider folder.

``status`` runs the scan on every call, and on an unchanged folder the answer is
the same; computing it means importing the variable-file reader and the
expression evaluator, a large share of what ``status`` costs. So the answer (the
list of blocking decisions) is kept in the user's cache (:mod:`..usercache`, kind
``scan``), one entry per provider folder and installed engine, under a fingerprint
of everything the scan reads:

* every file in the folders that hold the template's decision files but the
  saved plans, state and records plan and apply write there (name, size,
  inode, modification and change times): the variable files Terraform loads and
  the ``*.tf`` files whose ``variable`` blocks judge the values;
* the template's decisions (key, variable, file, placeholder, why, probe);
* the code it runs (the scan's modules and the engine modules they read files
  and build answers with, by size and modification time), so a changed engine
  never reads an older engine's answer.

Any difference is a miss and the scan runs; the usercache's rules apply (nothing
written while a file is fresh, a failing scan never kept).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..contract.result import Blocking
from ..settings import usercache
from ..world.paths import ProviderPaths
from ..world.vendors import Template

_CODE = Path(__file__).resolve().parent

# What plan, apply and destroy write beside the variable files, which the scan never
# reads: a plan in an agent's loop rewrites them on every run, and the answer stays.
RUN_ARTIFACTS = frozenset(
    {
        "tfplan",
        "tfplan.meta.json",
        "tfplan.init.json",
        "destroy.tfplan",
        "drift.tfplan",
        "tfplan.drift.json",
        "terraform.tfstate",
        "terraform.tfstate.backup",
        ".terraform.tfstate.lock.info",
        ".terraform.lock.hcl",
    }
)


def fingerprint(paths: ProviderPaths, template: Template) -> dict[str, Any] | None:
    """What the scan of ``paths`` against ``template`` reads, as comparable data;
    ``None`` when a folder cannot be listed (then nothing is remembered)."""
    folders = sorted({str((paths.dir / d.file).absolute().parent) for d in template.decisions})
    files = {}
    for f in folders:
        listing = usercache.listing(Path(f))
        if listing is None:
            return None
        files[f] = [e for e in listing if e[0] not in RUN_ARTIFACTS]
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
        keep=usercache.settled(stats),
    )
    return [Blocking(**b) for b in got]


__all__ = ["fingerprint", "remembered"]
