"""List, set, map and tuple functions, keeping the collection kinds of
:mod:`.values` (a ``tolist`` is a list, not a tuple)."""

from __future__ import annotations

from typing import Any

from .errors import EvalError, Unevaluable
from .fn_args import coll_arg, int_arg, str_arg
from .values import (
    ListVal,
    LooseDict,
    LooseList,
    MapVal,
    SetVal,
    equal,
    sort_key,
    to_bool,
    to_str,
    type_name,
)


def _unify(items: list[Any]) -> list[Any]:
    """Elements of a tuple as one element type, as ``tolist``/``toset`` do."""
    kinds = {type_name(x) for x in items if x is not None}
    if not kinds:
        if items:
            raise Unevaluable("a collection of only nulls")
        return items
    if len(kinds) == 1:
        kind = next(iter(kinds))
        if kind in ("string", "number", "bool"):
            return items
        raise Unevaluable("a collection of structured values")
    if kinds <= {"string", "number", "bool"} and "string" in kinds:
        return [None if x is None else to_str(x) for x in items]
    if kinds == {"number", "bool"}:
        raise EvalError("elements of inconsistent types")
    raise Unevaluable("a collection of mixed values")


def _set_order(items: list[Any]) -> list[Any]:
    out: list[Any] = []
    for x in items:
        if not any(equal(x, y) for y in out):
            out.append(x)
    if any(x is None for x in out):
        raise Unevaluable("a set holding null")
    return sorted(out, key=sort_key)


def fn_tolist(v: Any) -> Any:
    if v is None:
        return None
    items = coll_arg("tolist", v)
    if isinstance(v, ListVal):
        return v
    if isinstance(v, SetVal):
        return ListVal(v)
    if isinstance(v, LooseList):
        raise Unevaluable("tolist of a collection whose type is not tracked")
    return ListVal(_unify(items))


def fn_toset(v: Any) -> Any:
    if v is None:
        return None
    items = coll_arg("toset", v)
    if isinstance(v, SetVal):
        return v
    if isinstance(v, LooseList):
        raise Unevaluable("toset of a collection whose type is not tracked")
    if not isinstance(v, ListVal):
        items = _unify(items)
    elif any(isinstance(x, list | dict) for x in items):
        raise Unevaluable("a set of structured values")
    return SetVal(_set_order(items))


def fn_tomap(v: Any) -> Any:
    if v is None:
        return None
    if not isinstance(v, dict):
        raise EvalError(f"tomap: a map is required, got {type_name(v)}")
    if isinstance(v, MapVal):
        return v
    if isinstance(v, LooseDict):
        raise Unevaluable("tomap of a collection whose type is not tracked")
    keys = list(v)
    return MapVal(zip(keys, _unify([v[k] for k in keys]), strict=True))


def fn_contains(coll: Any, v: Any) -> bool:
    if v is None:
        raise EvalError("contains: the value must not be null")
    items = coll_arg("contains", coll)
    unsure: Unevaluable | None = None
    for x in items:
        try:
            if equal(x, v):
                return True
        except Unevaluable as e:
            unsure = e
    if unsure is not None:
        raise unsure
    return False


def fn_index(coll: Any, v: Any) -> int:
    items = coll_arg("index", coll)
    if isinstance(coll, SetVal | LooseList):
        raise Unevaluable("index of a set or an untracked collection")
    if v is None:
        raise Unevaluable("index of null")
    for i, x in enumerate(items):
        if equal(x, v):
            return i
    raise EvalError("item not found")


def _bools(name: str, coll: Any) -> list[bool]:
    out = []
    for x in coll_arg(name, coll):
        if x is None:
            raise Unevaluable(f"{name}: a null element")
        out.append(to_bool(x))
    return out


def fn_alltrue(coll: Any) -> bool:
    return all(_bools("alltrue", coll))


def fn_anytrue(coll: Any) -> bool:
    return any(_bools("anytrue", coll))


def fn_distinct(v: Any) -> Any:
    out: list[Any] = []
    for x in coll_arg("distinct", v):
        if not any(equal(x, y) for y in out):
            out.append(x)
    return LooseList(out)


def fn_keys(m: Any) -> Any:
    if not isinstance(m, dict):
        raise EvalError("keys needs a map or object")
    ks = sorted(m)
    return ListVal(ks) if isinstance(m, MapVal) else LooseList(ks)


def fn_values(m: Any) -> Any:
    if not isinstance(m, dict):
        raise EvalError("values needs a map or object")
    return LooseList(m[k] for k in sorted(m))


def fn_concat(*lists: Any) -> Any:
    return LooseList(x for lst in lists for x in coll_arg("concat", lst))


def fn_flatten(v: Any) -> Any:
    out: list[Any] = []
    for x in coll_arg("flatten", v):
        if isinstance(x, list):
            out.extend(fn_flatten(x))
        else:
            out.append(x)
    return LooseList(out)


def fn_lookup(m: Any, key: Any, *default: Any) -> Any:
    if not isinstance(m, dict):
        raise EvalError("lookup needs a map")
    if len(default) > 1:
        raise Unevaluable("lookup takes at most three arguments")
    k = str_arg("lookup", key)
    if k in m:
        if default and not all(type_name(v) == type_name(default[0]) for v in m.values()):
            raise Unevaluable("lookup whose default has another type")
        return m[k]
    if default:
        if any(type_name(v) != type_name(default[0]) for v in m.values()):
            raise Unevaluable("lookup whose default has another type")
        return default[0]
    raise EvalError(f"the given key {k!r} does not exist in the map")


def fn_coalesce(*vals: Any) -> Any:
    kinds = {type_name(v) for v in vals if v is not None}
    if len(kinds) > 1 or not kinds <= {"string", "number", "bool"}:
        raise Unevaluable("coalesce of values of different types")
    for v in vals:
        if v is not None and v != "":
            return v
    raise EvalError("no non-null, non-empty-string arguments")


def fn_compact(coll: Any) -> Any:
    items = coll_arg("compact", coll)
    if not all(x is None or isinstance(x, str) for x in items):
        raise Unevaluable("compact of values that are not all strings")
    return ListVal(x for x in items if x)


def fn_element(coll: Any, index: Any) -> Any:
    if isinstance(coll, SetVal | LooseList):
        raise Unevaluable("element of a set or an untracked collection")
    items = coll_arg("element", coll)
    i = int_arg("element", index)
    if not items:
        raise EvalError("element: cannot use element function with an empty list")
    if i < 0:
        raise Unevaluable("element with a negative index")
    return items[i % len(items)]


def fn_one(coll: Any) -> Any:
    items = coll_arg("one", coll)
    if len(items) > 1:
        raise EvalError("one: must be a list, set, or tuple value with either zero or one elements")
    return items[0] if items else None


def fn_merge(*maps: Any) -> Any:
    out: dict[str, Any] = {}
    for m in maps:
        if m is None:
            continue
        if not isinstance(m, dict):
            raise Unevaluable("merge of a value that is not a map or object")
        out.update(m)
    return LooseDict(out)


def fn_reverse(coll: Any) -> Any:
    if isinstance(coll, SetVal | LooseList):
        raise Unevaluable("reverse of a set or an untracked collection")
    return LooseList(reversed(coll_arg("reverse", coll)))


def fn_sort(coll: Any) -> Any:
    items = coll_arg("sort", coll)
    if not all(isinstance(x, str) for x in items):
        raise Unevaluable("sort of values that are not all strings")
    return ListVal(sorted(items))
