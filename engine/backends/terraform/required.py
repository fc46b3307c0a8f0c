"""The Terraform version a configuration needs, checked before terraform runs.

Every template declares ``required_version`` in its ``terraform {}`` block. A
binary older than that would fail on the first construct it does not know (a
``precondition`` block in Terraform 1.0: "Unsupported block type"), with no word
about versions. :func:`require_version` reads the constraints of the ``.tf``
files, asks the binary its version (``terraform version -json``, through the
runner) and raises :class:`TerraformTooOld` — kind ``no_binary``, as for a
missing binary — naming both versions, with a next action that points
``TERRAFORM_BINARY`` at a binary that satisfies them (one found on this machine
when there is one).

Constraint syntax as Terraform's: comma-separated ``=``, ``!=``, ``>``, ``>=``,
``<``, ``<=``, ``~>`` (a bare version is ``=``).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

from ...contract.errors import BinaryMissing
from ...contract.result import Shell
from ...settings.records import record
from .executable import exec_path
from .hcltext import block_body
from .runner import ENV_BINARY, OFFICIAL_INSTALL, run, terraform_binary
from .tfexec import version_args

# Compiled by ``re`` on first use (its cache keeps them): an apply the console script
# started ahead checks no version, and imports this module only with the backend.
_CONSTRAINT = r"^\s*(=|!=|>=|<=|>|<|~>)?\s*v?([0-9]+(?:\.[0-9]+){0,2})(-[0-9A-Za-z.-]+)?\s*$"
_TERRAFORM_BLOCK = r"(?m)^\s*terraform\s*\{"
_REQUIRED = r'(?m)^\s*required_version\s*=\s*"([^"]*)"'


class TerraformTooOld(BinaryMissing):
    """The terraform binary does not satisfy the configuration's ``required_version``."""

    def __init__(
        self, message: str, *, binary: str, version: str, required: str, next_action: Shell
    ) -> None:
        super().__init__(message, next_action=next_action)
        self.binary = binary
        self.version = version
        self.required = required


@record(eq=False)  # never compared (statefile.StateFile)
class Requirement:
    """One ``required_version`` constraint and the file that declares it."""

    constraint: str
    file: Path


def _key(text: str) -> tuple[int, int, int, int]:
    """``(major, minor, patch, release)``: a pre-release sorts before its release."""
    core, _, pre = text.strip().lstrip("v").partition("-")
    nums = [int(x) for x in core.split(".")[:3] if x.isdigit()]
    nums += [0] * (3 - len(nums))
    return nums[0], nums[1], nums[2], 0 if pre else 1


def satisfies(version: str, constraint: str) -> bool:
    """``version`` meets every comma-separated part of ``constraint``. A part that
    cannot be read is not held against the binary (terraform itself then says what
    is wrong with it)."""
    have = _key(version)
    for part in constraint.split(","):
        if not part.strip():
            continue
        m = re.match(_CONSTRAINT, part)
        if m is None:
            continue
        op, text = m.group(1) or "=", m.group(2) + (m.group(3) or "")
        want = _key(text)
        ok = {
            "=": have == want,
            "!=": have != want,
            ">": have > want,
            ">=": have >= want,
            "<": have < want,
            "<=": have <= want,
            # ~> 1.2 allows 1.x (x >= 2); ~> 1.2.3 allows 1.2.x (x >= 3).
            "~>": have >= want
            and have[: max(m.group(2).count("."), 1)] == want[: max(m.group(2).count("."), 1)],
        }[op]
        if not ok:
            return False
    return True


def requirements(tf_dir: Path) -> list[Requirement]:
    """The ``required_version`` constraints of the ``terraform {}`` blocks in the
    configuration's ``.tf`` files (read as text: no parser on this path)."""
    out: list[Requirement] = []
    for path in sorted(tf_dir.glob("*.tf")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for block in re.finditer(_TERRAFORM_BLOCK, text):
            body = block_body(text, block.end())
            out += [Requirement(m.group(1), path) for m in re.finditer(_REQUIRED, body)]
    return out


def binary_version(binary: str, cwd: Path) -> str | None:
    """``terraform version -json``'s ``terraform_version``; None when it cannot say.
    Remembered in the user's cache (``terraform-version``) under the binary's file
    stats (and those of the binary a wrapper script runs): the same file answers
    the same, so only a new or changed binary is asked."""
    from ...settings.usercache import file_stats, remembered, settled

    def ask() -> str | None:
        done = run(version_args(), cwd=cwd, timeout=60, binary=binary)
        try:
            return str(json.loads(done.stdout)["terraform_version"])
        except (ValueError, KeyError, TypeError):
            return None

    stats = [file_stats(binary), file_stats(exec_path(binary))]
    if stats[0] is None or stats[1] is None:
        return ask()
    files: list[list[object]] = [s for s in stats if s is not None]
    answer = remembered(
        "terraform-version",
        os.path.abspath(binary),
        stats,
        ask,
        keep=lambda v: isinstance(v, str) and settled(files),
    )
    return answer if isinstance(answer, str) else None


def _candidates(used: str) -> list[str]:
    """Other terraform binaries on this machine: ``terraform`` in every folder of
    PATH (not only the first, which is often the one too old), the one beside the
    running interpreter."""
    dirs = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d]
    found = [os.path.join(d, "terraform") for d in dirs]
    found.append(str(Path(sys.executable).parent / "terraform"))
    out: list[str] = []
    for c in found:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            real = os.path.realpath(c)
            if real != os.path.realpath(used) and real not in map(os.path.realpath, out):
                out.append(os.path.abspath(c))
    return out


def require_version(
    tf_dir: Path, *, binary: str | None = None, known: str | None = None
) -> str | None:
    """Raise :class:`TerraformTooOld` when the binary does not satisfy the
    configuration's ``required_version``; otherwise return the binary's version
    (None when there is no constraint, or the version cannot be read: terraform
    decides then). ``known``: the version of ``binary`` already known (the init
    record's, for the same file), so that no ``terraform version`` runs."""
    reqs = requirements(tf_dir)
    if not reqs:
        return known
    binary = binary or terraform_binary()
    version = known or binary_version(binary, tf_dir)
    if version is None:
        return None
    unmet = [r for r in reqs if not satisfies(version, r.constraint)]
    if not unmet:
        return version
    wanted = ", ".join(dict.fromkeys(r.constraint for r in unmet))
    where = ", ".join(dict.fromkeys(r.file.name for r in unmet))
    newer = None  # the newest binary found that satisfies every constraint
    for other in _candidates(binary):
        v = binary_version(other, tf_dir)
        fits = v is not None and all(satisfies(v, r.constraint) for r in reqs)
        if fits and v is not None and (newer is None or _key(v) > _key(newer[1])):
            newer = (other, v)
    chosen = (
        f"{ENV_BINARY}={os.environ[ENV_BINARY]}"
        if os.environ.get(ENV_BINARY, "").strip()
        else "terraform on PATH"
    )
    message = (
        f"Terraform {version} ({binary}, {chosen}) is too old for this configuration: it "
        f"needs Terraform {wanted} (required_version in {where} of {tf_dir})."
    )
    if newer is not None:
        message += (
            f" Terraform {newer[1]} is at {newer[0]}: point {ENV_BINARY} at it and run again."
        )
        command = f"export {ENV_BINARY}={newer[0]}"
    else:
        message += (
            f" Install Terraform {wanted} ({OFFICIAL_INSTALL}) and point {ENV_BINARY} at it, "
            "then run again."
        )
        command = f"export {ENV_BINARY}=/path/to/terraform  # Terraform {wanted}"
    raise TerraformTooOld(
        message,
        binary=binary,
        version=version,
        required=wanted,
        next_action=Shell(command=command),
    )


__all__ = [
    "Requirement",
    "TerraformTooOld",
    "binary_version",
    "require_version",
    "requirements",
    "satisfies",
]
