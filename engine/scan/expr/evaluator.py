"""Evaluation of parsed nodes against a scope such as ``{"var": {...}}``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .errors import EvalError, Unevaluable
from .functions import FUNCTIONS
from .parser import parse
from .values import (
    LooseList,
    MapVal,
    SetVal,
    arith,
    equal,
    frac,
    loosen,
    make_number,
    nfc,
    to_bool,
    to_num,
    to_str,
    type_name,
)


class Evaluator:
    """Evaluates parsed nodes against ``scope`` (e.g. ``{"var": {...}}``)."""

    def __init__(self, scope: dict[str, Any]) -> None:
        self.scope = scope

    def run(self, node: Any) -> Any:
        """:meth:`eval`, where any failure that is not a Terraform-like
        :class:`EvalError` counts as :class:`Unevaluable` (left for plan)."""
        try:
            return self.eval(node)
        except (EvalError, Unevaluable):
            raise
        except RecursionError:
            raise Unevaluable("expression is too deep") from None
        except Exception as e:
            raise Unevaluable(f"cannot evaluate: {e}") from None

    def eval(self, node: Any, local: dict[str, Any] | None = None) -> Any:
        local = local or {}
        kind = node[0]
        if kind == "lit":
            return node[1]
        if kind == "tmpl":
            text = [p if isinstance(p, str) else _interp(self.eval(p, local)) for p in node[1]]
            return nfc("".join(text))
        if kind == "ref":
            name = node[1]
            if name in local:
                return local[name]
            if name in self.scope:
                return self.scope[name]
            raise Unevaluable(f"unknown reference {name!r}")
        if kind == "attr":
            return self._attr(self.eval(node[1], local), node[2])
        if kind == "index":
            return self._index(self.eval(node[1], local), self.eval(node[2], local))
        if kind == "splat":
            return self._splat(node, local)
        if kind == "call":
            return self._call(node, local)
        return self._construct(node, local)

    def _attr(self, obj: Any, name: str) -> Any:
        if obj is None:
            raise EvalError(f"cannot read attribute {name!r} of null")
        if not isinstance(obj, dict):
            raise EvalError(f"cannot read attribute {name!r} of a {type_name(obj)}")
        if name not in obj:
            if obj is self.scope.get("var"):
                raise Unevaluable(f"var.{name} is not known here")
            if not isinstance(obj, MapVal):
                # an object's missing attribute can be a static error that
                # even can() does not hide
                raise Unevaluable(f"no attribute {name!r}")
            raise EvalError(f"no attribute {name!r}")
        return obj[name]

    def _splat(self, node: Any, local: dict[str, Any]) -> Any:
        _, src, path = node
        value = self.eval(src, local)
        if value is None:
            items: list[Any] = []
        elif isinstance(value, list):
            items = list(value)
        else:
            items = [value]
        out = []
        for item in items:
            for step in path:
                if step[0] == "attr":
                    item = self._attr(item, step[1])
                else:
                    item = self._index(item, self.eval(step[1], local))
            out.append(item)
        return LooseList(out)

    def _construct(self, node: Any, local: dict[str, Any]) -> Any:
        kind = node[0]
        if kind == "list":
            return [self.eval(x, local) for x in node[1]]
        if kind == "obj":
            out: dict[str, Any] = {}
            for k, v in node[1]:
                key = self.eval(k, local)
                if key is None:
                    raise EvalError("an object key must not be null")
                if isinstance(key, list | dict):
                    raise EvalError("an object key must be a string")
                name = to_str(key)
                if name in out:
                    raise Unevaluable(f"duplicate object key {name!r}")
                out[name] = self.eval(v, local)
            return out
        if kind == "unop":
            v = self.eval(node[2], local)
            if v is None:
                raise EvalError("operand must not be null")
            if node[1] == "!":
                return not to_bool(v)
            return make_number(-frac(to_num(v)))
        if kind == "binop":
            return self._binop(node, local)
        if kind == "cond":
            return self._cond(node, local)
        if kind == "for_list":
            _, kn, vn, coll, body, cond = node
            return [self.eval(body, scope) for scope in self._for_scopes(kn, vn, coll, cond, local)]
        if kind == "for_obj":
            _, kn, vn, coll, kexpr, vexpr, group, cond = node
            res: dict[str, Any] = {}
            for scope in self._for_scopes(kn, vn, coll, cond, local):
                kv = self.eval(kexpr, scope)
                if kv is None or isinstance(kv, list | dict):
                    raise EvalError("a for expression's key must be a string")
                k = to_str(kv)
                v = self.eval(vexpr, scope)
                if group:
                    res.setdefault(k, []).append(v)
                elif k in res:
                    raise EvalError(f"duplicate object key {k!r}")
                else:
                    res[k] = v
            return res
        raise Unevaluable(f"unsupported expression {kind}")

    @staticmethod
    def _index(obj: Any, key: Any) -> Any:
        if obj is None:
            raise EvalError("cannot index null")
        if key is None:
            raise EvalError("an index must not be null")
        if isinstance(obj, dict):
            if isinstance(key, list | dict):
                raise EvalError("a key must be a string")
            k = to_str(key)
            if k not in obj:
                if not isinstance(obj, MapVal):
                    raise Unevaluable(f"no attribute {k!r}")
                raise EvalError(f"no element {k!r}")
            return obj[k]
        if isinstance(obj, SetVal | LooseList):
            raise Unevaluable("indexing a set or a collection whose type is not tracked")
        if not isinstance(obj, list):
            raise EvalError(f"cannot index a {type_name(obj)}")
        if isinstance(key, list | dict | bool):
            raise EvalError("an index must be a number")
        i = to_num(key)
        if not isinstance(i, int):
            raise Unevaluable("a fractional index")
        if not 0 <= i < len(obj):
            raise EvalError(f"index {i} out of range")
        return obj[i]

    def _for_scopes(
        self, kn: str | None, vn: str, coll_node: Any, cond: Any, local: dict[str, Any]
    ) -> Iterator[dict[str, Any]]:
        coll = self.eval(coll_node, local)
        if coll is None:
            raise EvalError("cannot iterate over null")
        if isinstance(coll, dict):
            items: list[tuple[Any, Any]] = [(k, coll[k]) for k in sorted(coll)]
        elif isinstance(coll, list):
            if isinstance(coll, SetVal | LooseList) and kn:
                raise Unevaluable("the key of a set element")
            items = list(enumerate(coll))
        else:
            raise EvalError(f"cannot iterate over a {type_name(coll)}")
        for k, v in items:
            scope = {**local, vn: v}
            if kn:
                scope[kn] = k
            if cond is not None:
                c = self.eval(cond, scope)
                if c is None:
                    raise EvalError("a for expression's condition must not be null")
                if not to_bool(c):
                    continue
            yield scope

    def _both(self, a_node: Any, b_node: Any, local: dict[str, Any]) -> tuple[Any, Any]:
        """Both operands, as Terraform evaluates them (no short-circuit): an
        error in either is the expression's error."""
        results: list[Any] = []
        unsure: Unevaluable | None = None
        for n in (a_node, b_node):
            try:
                results.append(self.eval(n, local))
            except Unevaluable as e:
                unsure = e
                results.append(None)
        if unsure is not None:
            raise unsure
        return results[0], results[1]

    def _binop(self, node: Any, local: dict[str, Any]) -> Any:
        _, op, a_node, b_node = node
        a, b = self._both(a_node, b_node, local)
        if op == "==":
            return equal(a, b)
        if op == "!=":
            return not equal(a, b)
        if a is None or b is None:
            raise EvalError(f"an operand of {op} must not be null")
        if op in ("&&", "||"):
            p, q = to_bool(a), to_bool(b)
            return (p and q) if op == "&&" else (p or q)
        if isinstance(a, list | dict) or isinstance(b, list | dict):
            raise EvalError(f"{op} needs numbers")
        x, y = to_num(a), to_num(b)
        if op == "<":
            return x < y
        if op == ">":
            return x > y
        if op == "<=":
            return x <= y
        if op == ">=":
            return x >= y
        return arith(op, x, y)

    def _cond(self, node: Any, local: dict[str, Any]) -> Any:
        _, c_node, a_node, b_node = node
        c = self.eval(c_node, local)
        if c is None:
            raise EvalError("the condition must not be null")
        chosen_node, other_node = (a_node, b_node) if to_bool(c) else (b_node, a_node)
        chosen = self.eval(chosen_node, local)
        try:
            other = self.eval(other_node, local)
        except EvalError:
            return chosen  # its type is unknown to Terraform too: the value passes as is
        return _unify_result(chosen, other, other_node)

    def _call(self, node: Any, local: dict[str, Any]) -> Any:
        _, name, arg_nodes, expand = node
        if name == "can":
            if len(arg_nodes) != 1 or expand:
                raise Unevaluable("can takes one argument")
            try:
                self.eval(arg_nodes[0], local)
            except EvalError:
                return False
            return True
        if name == "try":
            if not arg_nodes or expand:
                raise Unevaluable("try needs arguments")
            last: EvalError | None = None
            for a in arg_nodes:
                try:
                    return self.eval(a, local)
                except EvalError as e:
                    last = e
            assert last is not None
            raise last
        fn = FUNCTIONS.get(name)
        if fn is None:
            raise Unevaluable(f"function {name!r} is not supported")
        args = [self.eval(a, local) for a in arg_nodes]
        if expand:
            if not args or not isinstance(args[-1], list):
                raise Unevaluable("argument expansion of a non-list")
            args = args[:-1] + list(args[-1])
        try:
            return fn(*args)
        except TypeError as e:
            raise Unevaluable(f"{name}: {e}") from None


def _interp(v: Any) -> str:
    if isinstance(v, list | dict):
        raise EvalError(f"cannot include a {type_name(v)} in a string template")
    return to_str(v)


def _unify_result(chosen: Any, other: Any, other_node: Any) -> Any:
    """The chosen branch of ``c ? a : b`` converted to the type both branches
    unify to, as Terraform does (``true ? 1 : "x"`` is the string ``"1"``)."""
    if chosen is None:
        return None
    if other is None:
        if other_node == ("lit", None):
            return chosen
        raise Unevaluable("a null of a type not tracked in the other branch")
    ka, kb = type_name(chosen), type_name(other)
    prim = ("string", "number", "bool")
    if ka in prim and kb in prim:
        if ka == kb:
            return chosen
        if "string" in (ka, kb):
            return to_str(chosen)
        raise EvalError("inconsistent conditional result types")
    if ka in prim or kb in prim:
        raise Unevaluable("conditional branches of primitive and structured types")
    return loosen(chosen)


def evaluate(node_or_src: Any, scope: dict[str, Any] | None = None) -> Any:
    """Evaluate an expression (source text or a parsed node) in ``scope``."""
    try:
        node = parse(node_or_src) if isinstance(node_or_src, str) else node_or_src
    except RecursionError:
        raise Unevaluable("expression is too deep") from None
    return Evaluator(scope or {}).run(node)
