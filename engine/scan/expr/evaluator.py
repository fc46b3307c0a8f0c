"""Evaluation of parsed nodes against a scope such as ``{"var": {...}}``."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from .errors import EvalError, Unevaluable
from .functions import FUNCTIONS
from .parser import parse
from .values import equal, seq, to_bool, to_num, to_str, type_name


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
            text = [p if isinstance(p, str) else to_str(self.eval(p, local)) for p in node[1]]
            return "".join(text)
        if kind == "ref":
            name = node[1]
            if name in local:
                return local[name]
            if name in self.scope:
                return self.scope[name]
            raise Unevaluable(f"unknown reference {name!r}")
        if kind == "attr":
            obj = self.eval(node[1], local)
            if not isinstance(obj, dict):
                raise EvalError(f"cannot read attribute {node[2]!r} of a {type_name(obj)}")
            if node[2] not in obj:
                if obj is self.scope.get("var"):
                    raise Unevaluable(f"var.{node[2]} is not known here")
                raise EvalError(f"no attribute {node[2]!r}")
            return obj[node[2]]
        if kind == "index":
            obj = self.eval(node[1], local)
            key = self.eval(node[2], local)
            if isinstance(obj, dict):
                k = to_str(key)
                if k not in obj:
                    raise EvalError(f"no element {k!r}")
                return obj[k]
            items = seq(obj)
            i = to_num(key)
            if not isinstance(i, int) or not 0 <= i < len(items):
                raise EvalError(f"index {key!r} out of range")
            return items[i]
        if kind == "splat":
            raise Unevaluable("splat expressions are not supported")
        if kind == "call":
            return self._call(node, local)
        if kind == "list":
            return [self.eval(x, local) for x in node[1]]
        if kind == "obj":
            return {to_str(self.eval(k, local)): self.eval(v, local) for k, v in node[1]}
        if kind == "unop":
            v = self.eval(node[2], local)
            return (not to_bool(v)) if node[1] == "!" else -to_num(v)
        if kind == "binop":
            return self._binop(node, local)
        if kind == "cond":
            c = to_bool(self.eval(node[1], local))
            return self.eval(node[2] if c else node[3], local)
        if kind == "for_list":
            _, kn, vn, coll, body, cond = node
            return [self.eval(body, scope) for scope in self._for_scopes(kn, vn, coll, cond, local)]
        if kind == "for_obj":
            _, kn, vn, coll, kexpr, vexpr, group, cond = node
            out: dict[str, Any] = {}
            for scope in self._for_scopes(kn, vn, coll, cond, local):
                k = to_str(self.eval(kexpr, scope))
                v = self.eval(vexpr, scope)
                if group:
                    out.setdefault(k, []).append(v)
                elif k in out:
                    raise EvalError(f"duplicate object key {k!r}")
                else:
                    out[k] = v
            return out
        raise Unevaluable(f"unsupported expression {kind}")

    def _for_scopes(
        self, kn: str | None, vn: str, coll_node: Any, cond: Any, local: dict[str, Any]
    ) -> Iterator[dict[str, Any]]:
        coll = self.eval(coll_node, local)
        if isinstance(coll, dict):
            items: list[tuple[Any, Any]] = [(k, coll[k]) for k in sorted(coll)]
        else:
            items = list(enumerate(seq(coll)))
        for k, v in items:
            scope = {**local, vn: v}
            if kn:
                scope[kn] = k
            if cond is None or to_bool(self.eval(cond, scope)):
                yield scope

    def _binop(self, node: Any, local: dict[str, Any]) -> Any:
        _, op, a_node, b_node = node
        a = self.eval(a_node, local)
        if op == "&&":
            return to_bool(a) and to_bool(self.eval(b_node, local))
        if op == "||":
            return to_bool(a) or to_bool(self.eval(b_node, local))
        b = self.eval(b_node, local)
        if op == "==":
            return equal(a, b)
        if op == "!=":
            return not equal(a, b)
        x, y = to_num(a), to_num(b)
        if op == "<":
            return x < y
        if op == ">":
            return x > y
        if op == "<=":
            return x <= y
        if op == ">=":
            return x >= y
        if op == "+":
            return x + y
        if op == "-":
            return x - y
        if op == "*":
            return x * y
        if y == 0 and op in "/%":
            raise EvalError("division by zero")
        if op == "/":
            q = x / y
            return int(q) if q.is_integer() else q
        return (
            math.fmod(x, y)
            if isinstance(x, float) or isinstance(y, float)
            else int(math.fmod(x, y))
        )

    def _call(self, node: Any, local: dict[str, Any]) -> Any:
        _, name, arg_nodes, expand = node
        if name == "can":
            if len(arg_nodes) != 1:
                raise EvalError("can takes one argument")
            try:
                self.eval(arg_nodes[0], local)
            except EvalError:
                return False
            return True
        if name == "try":
            last: EvalError | None = None
            for a in arg_nodes:
                try:
                    return self.eval(a, local)
                except EvalError as e:
                    last = e
            raise last or EvalError("try needs at least one argument")
        fn = FUNCTIONS.get(name)
        if fn is None:
            raise Unevaluable(f"function {name!r} is not supported")
        args = [self.eval(a, local) for a in arg_nodes]
        if expand and args:
            args = args[:-1] + seq(args[-1])
        try:
            return fn(*args)
        except TypeError as e:
            raise EvalError(f"{name}: {e}") from None


def evaluate(node_or_src: Any, scope: dict[str, Any] | None = None) -> Any:
    """Evaluate an expression (source text or a parsed node) in ``scope``."""
    try:
        node = parse(node_or_src) if isinstance(node_or_src, str) else node_or_src
    except RecursionError:
        raise Unevaluable("expression is too deep") from None
    return Evaluator(scope or {}).run(node)
