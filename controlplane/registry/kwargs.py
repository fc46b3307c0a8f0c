"""Kwargs as the CLI and API handle them: dotted ``k=v`` pairs, files, deep patches.

Pure functions, no I/O beyond reading a named kwargs file.

* ``parse_assignment("a.b=3")`` -> ``(["a", "b"], 3)``; values are read as JSON when
  they parse as JSON (numbers, booleans, ``null``, objects, arrays, quoted strings)
  and as plain strings otherwise, so ``region=us-east-1`` stays a string and
  ``aws_credentials={"$secret":"aws"}`` is a secret marker.
* ``assignments_to_patch([...])`` nests dotted keys into one patch object.
* ``apply_patch(base, patch)`` deep-merges; a ``None`` value deletes the key.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

KWARGS_FILE_LIMIT = 1024 * 1024
"""A provider's kwargs are a small mapping; a larger file is the wrong file."""


class KwargsError(ValueError):
    """A ``--kwarg`` / ``--field`` / kwargs file the user must fix."""


def parse_value(raw: str) -> Any:
    text = raw.strip()
    if text == "":
        return ""
    if text[0] in '{["' or text in ("null", "true", "false") or _looks_numeric(text):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            if text[0] in "{[":
                raise KwargsError(
                    f"value {raw!r} starts like JSON but is not valid JSON: {exc.msg}"
                ) from exc
            return raw
    return raw


def _looks_numeric(text: str) -> bool:
    if text[0] == "0" and len(text) > 1 and text[1].isdigit():
        return False  # keep leading-zero strings (ids, octal-looking values) verbatim
    head = text[1:] if text[0] == "-" else text
    return bool(head) and head[0].isdigit()


def parse_assignment(item: str, *, flag: str = "--kwarg") -> tuple[list[str], Any]:
    if "=" not in item:
        raise KwargsError(f"{flag} {item!r} is not KEY=VALUE (dotted keys nest: a.b=c)")
    key, _, raw = item.partition("=")
    key = key.strip()
    parts = key.split(".")
    if not key or any(p == "" for p in parts):
        raise KwargsError(f"{flag} {item!r} has an empty key segment")
    return parts, parse_value(raw)


def assignments_to_patch(items: Iterable[str], *, flag: str = "--kwarg") -> dict[str, Any]:
    """Nest ``a.b=c`` assignments into one patch; later assignments win."""
    patch: dict[str, Any] = {}
    for item in items:
        parts, value = parse_assignment(item, flag=flag)
        node = patch
        for seg in parts[:-1]:
            nxt = node.get(seg)
            if not isinstance(nxt, dict):
                nxt = {}
                node[seg] = nxt
            node = nxt
        node[parts[-1]] = value
    return patch


def apply_patch(base: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """Deep-merge ``patch`` onto ``base``: objects merge recursively, ``None`` deletes,
    anything else replaces. Neither input is modified."""
    out: dict[str, Any] = copy.deepcopy(dict(base))
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif (
            isinstance(value, Mapping)
            and not is_secret_marker(value)
            and isinstance(out.get(key), Mapping)
            and not is_secret_marker(out.get(key))
        ):
            out[key] = apply_patch(out[key], value)
        elif isinstance(value, Mapping):
            out[key] = _drop_nulls(value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _drop_nulls(value: Mapping[str, Any]) -> dict[str, Any]:
    return {
        k: (_drop_nulls(v) if isinstance(v, Mapping) else copy.deepcopy(v))
        for k, v in value.items()
        if v is not None
    }


def is_secret_marker(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and len(value) == 1
        and "$secret" in value
        and isinstance(value["$secret"], str)
    )


def load_kwargs_file(path: str | Path) -> dict[str, Any]:
    """A YAML or JSON mapping (JSON is YAML, so one loader reads both)."""
    import yaml  # only here: a server that reads no kwargs file does not import it
    from dreamlake.engine.settings.readers import FileProblem, read_text
    from dreamlake.engine.settings.yamlload import safe_load

    p = Path(path)
    try:
        text = read_text(p, limit=KWARGS_FILE_LIMIT)
    except FileProblem as exc:
        raise KwargsError(f"kwargs file {p}: {exc.reason}") from None
    except OSError as exc:
        raise KwargsError(f"cannot read kwargs file {p}: {exc.strerror or exc}") from exc
    try:
        data = safe_load(text) if text.strip() else {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{p}:{mark.line + 1}" if mark is not None else str(p)
        raise KwargsError(f"{where}: not valid YAML/JSON: {getattr(exc, 'problem', exc)}") from None
    except RecursionError:
        raise KwargsError(f"kwargs file {p}: nested too deeply to read") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise KwargsError(f"{p}: a kwargs file must hold a mapping, not {type(data).__name__}")
    return data


def build_kwargs(
    items: Iterable[str], kwargs_file: str | Path | None = None, *, flag: str = "--kwarg"
) -> dict[str, Any]:
    """``--kwargs-file`` as the base, ``--kwarg`` layered on top (null deletes)."""
    base = load_kwargs_file(kwargs_file) if kwargs_file else {}
    return apply_patch(base, assignments_to_patch(items, flag=flag))


def secret_refs(value: Any, path: str = "") -> list[tuple[str, str]]:
    """Every ``{"$secret": name}`` marker as ``(dotted path, secret name)``."""
    found: list[tuple[str, str]] = []
    if is_secret_marker(value):
        found.append((path or "(root)", value["$secret"]))
    elif isinstance(value, Mapping):
        for k, v in value.items():
            found.extend(secret_refs(v, f"{path}.{k}" if path else str(k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found.extend(secret_refs(v, f"{path}[{i}]"))
    return found
