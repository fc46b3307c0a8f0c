"""The adopt decision scan: ``adopt.json`` (ssh vendor) against ``TEMPLATE.json``.

Per decision, the JSON key named by ``var`` is

* ``unset`` when absent or ``null``;
* ``placeholder`` when still the template's placeholder (see :mod:`.placeholder`);
* ``invalid`` when it fails the check for its key (:data:`CHECKS`), with a message.

Lines come from scanning the text (``json`` gives none). A file that is not JSON
raises ``DreamlakeError(kind="adopt_syntax")`` pointing at the line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..contract.commands import create_continue
from ..contract.errors import DreamlakeError
from ..contract.result import Blocking, EditThenContinue
from ..world.paths import ProviderPaths
from ..world.vendors import Decision, Template
from .lines import KeyLines, json_key_lines
from .placeholder import is_placeholder

_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_USER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*\$?$")
_HOST_RE = re.compile(r"^[A-Za-z0-9_.:%\[\]-]+$")


def _check_host(v: Any) -> str | None:
    if not isinstance(v, str) or not v.strip():
        return 'host must be a non-empty host name or address, e.g. "gpu-box.internal".'
    if not _HOST_RE.match(v) or v.startswith("-"):
        return f"host {v!r} is not a host name or address (no spaces, user@ or ports: use user and port)."
    return None


def _check_user(v: Any) -> str | None:
    if not isinstance(v, str) or not v.strip():
        return 'user must be a non-empty account name, e.g. "ops".'
    if not _USER_RE.match(v):
        return f"user {v!r} is not an account name (letters, digits, '_', '.', '-')."
    return None


def _check_port(v: Any) -> str | None:
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 65535:
        return f"port must be a whole number from 1 to 65535, got {json.dumps(v)}."
    return None


def _check_queues(v: Any) -> str | None:
    if not isinstance(v, list) or not v:
        return 'queues must be a non-empty list of queue names, e.g. ["default"].'
    bad = [q for q in v if not isinstance(q, str) or not _NAME_RE.match(q)]
    if bad:
        return (
            f"queue names match ^[a-z0-9][a-z0-9-]*$ (lowercase letters, digits and dashes); "
            f"not {json.dumps(bad)}."
        )
    return None


CHECKS: dict[str, Callable[[Any], str | None]] = {
    "host": _check_host,
    "user": _check_user,
    "port": _check_port,
    "queues": _check_queues,
}
"""Checks by JSON key. A key without one is only checked for unset/placeholder."""


def read_adopt(path: Path, provider: str) -> tuple[dict[str, Any], KeyLines, bool]:
    """The values of ``adopt.json``, their lines, and whether the file exists."""
    from ..settings.readers import FileProblem, check_json_depth, read_text

    try:
        text = read_text(path)
    except FileNotFoundError:
        return {}, KeyLines(), False
    except FileProblem as e:
        raise _syntax_error(path, None, e.reason, provider) from None
    except (OSError, UnicodeDecodeError) as e:
        raise _syntax_error(path, None, f"cannot be read ({e})", provider) from None
    try:
        check_json_depth(text, path)
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise _syntax_error(path, e.lineno, e.msg, provider) from None
    except FileProblem as e:
        raise _syntax_error(path, None, e.reason, provider) from None
    except (ValueError, RecursionError) as e:  # e.g. an integer of 5,000 digits
        raise _syntax_error(path, None, str(e).split(";")[0], provider) from None
    if not isinstance(data, dict):
        raise _syntax_error(path, 1, "the top level must be a JSON object", provider)
    lines = json_key_lines(text)
    if lines.repeated:
        key, line = min(lines.repeated.items(), key=lambda kv: kv[1])
        raise _syntax_error(
            path, line, f'"{key}" is given twice (first on line {lines.assigned[key]})', provider
        )
    return data, lines, True


def _syntax_error(path: Path, line: int | None, detail: str, provider: str) -> DreamlakeError:
    where = f"{path}:{line}" if line else str(path)
    return DreamlakeError(
        f"{where}: {path.name} is not valid JSON: {detail}. Fix the syntax, then continue.",
        kind="adopt_syntax",
        next_action=EditThenContinue(file=str(path), command=create_continue(provider)),
    )


def _blocking(
    d: Decision, reason: str, path: Path, line: int | None, message: str | None = None
) -> Blocking:
    return Blocking(
        key=d.key,
        reason=reason,  # type: ignore[arg-type]
        file=str(path),
        line=line,
        why=d.why or None,
        message=message,
    )


def scan_adopt(paths: ProviderPaths, template: Template) -> list[Blocking]:
    """Every decision of ``template`` that ``adopt.json`` does not settle."""
    cache: dict[Path, tuple[dict[str, Any], KeyLines, bool]] = {}
    out: list[Blocking] = []
    for d in template.decisions:
        path = (paths.dir / d.file).absolute()
        if path not in cache:
            cache[path] = read_adopt(path, paths.name)
        data, lines, exists = cache[path]
        line = lines.line_of(d.var) if exists else None
        value = data.get(d.var)

        if value is None:
            out.append(_blocking(d, "unset", path, line))
            continue
        if is_placeholder(value, d.placeholder):
            out.append(
                _blocking(
                    d,
                    "placeholder",
                    path,
                    line,
                    f"still the template's placeholder {json.dumps(value)}",
                )
            )
            continue
        check = CHECKS.get(d.var)
        message = check(value) if check else None
        if message:
            out.append(_blocking(d, "invalid", path, line, message))
    return out


__all__ = ["CHECKS", "read_adopt", "scan_adopt"]
