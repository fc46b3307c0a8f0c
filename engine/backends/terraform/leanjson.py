"""JSON read (and a flat record written) with the interpreter's own JSON accelerator,
``_json``, without the ``json`` package: importing that package (its decoder, scanner
and encoder modules) took 2-4 ms of CPU here, before terraform's exec on the plan
and apply paths the console script starts ahead (``early``, ``early_apply``), which
read a few small records. The scanner is the very one ``json.loads`` uses; where the
accelerator is missing (another interpreter), ``json`` itself reads.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

_WHITESPACE = " \t\n\r"
_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}


class _Context:
    """What the accelerator's scanner reads from a ``json.JSONDecoder``: its defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_CONSTANTS.__getitem__)


_scan: Callable[[str, int], tuple[object, int]] | None
_encode: Callable[[str], str] | None
try:
    import _json

    _scan = _json.make_scanner(_Context())  # type: ignore[arg-type]
    _encode = _json.encode_basestring_ascii
except (ImportError, AttributeError, TypeError):  # pragma: no cover - not CPython
    _scan = _encode = None


def loads(data: bytes | str) -> Any:
    """``json.loads(data)`` for UTF-8 text; raises ``ValueError`` where it would (an
    invalid document, extra data after it)."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    if _scan is None:  # pragma: no cover - not CPython
        import json

        return json.loads(text)
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = _scan(text, start)
    except StopIteration as exc:
        raise ValueError(f"not a JSON document (at {exc.value})") from None
    if text[end:].strip(_WHITESPACE):
        raise ValueError(f"extra data after the JSON document (at {end})")
    return value


def dumps_flat(data: Mapping[str, object]) -> str:
    """``json.dumps(data, indent=2)`` of a flat mapping (strings, numbers, booleans,
    None as values); a test holds the two the same."""
    if _encode is None:  # pragma: no cover - not CPython
        import json

        return json.dumps(data, indent=2)
    encode = _encode
    rows = [f"  {encode(k)}: {_value(v, encode)}" for k, v in data.items()]
    return "{\n" + ",\n".join(rows) + "\n}" if rows else "{}"


def _value(v: object, encode: Callable[[str], str]) -> str:
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, str):
        return encode(v)
    if isinstance(v, int):
        return int.__repr__(v)
    if isinstance(v, float) and v == v and v not in (float("inf"), float("-inf")):
        return float.__repr__(v)
    raise ValueError(f"not a flat JSON value: {v!r}")


__all__ = ["dumps_flat", "loads"]
