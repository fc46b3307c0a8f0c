"""HCL expressions parsed into tuple nodes."""

from __future__ import annotations

from typing import Any

from .errors import EvalError, Unevaluable
from .lexer import Tok, read_string, tokens

# Nodes are tuples: ("lit", v), ("tmpl", parts), ("ref", name), ("attr", obj, name),
# ("index", obj, key), ("splat", obj, path), ("call", name, args, expand), ("list", items),
# ("obj", pairs), ("unop", op, x), ("binop", op, a, b), ("cond", c, a, b),
# ("for_list", k, v, coll, body, cond), ("for_obj", k, v, coll, kexpr, vexpr, group, cond).

_BINARY_LEVELS: tuple[tuple[str, ...], ...] = (
    ("||",),
    ("&&",),
    ("==", "!="),
    ("<", ">", "<=", ">="),
    ("+", "-"),
    ("*", "/", "%"),
)


class Parser:
    def __init__(self, src: str, start: int = 0) -> None:
        self.src = src
        self._it = tokens(src, start, _interpolation)
        self._tok: Tok | None = None

    @property
    def tok(self) -> Tok:
        # Lexed lazily: a template's "${...}" must not read past its closing brace.
        if self._tok is None:
            self._tok = next(self._it)
        return self._tok

    def advance(self) -> Tok:
        t = self.tok
        if t.kind != "eof":
            self._tok = None
        return t

    def at(self, value: str) -> bool:
        return self.tok.kind == "op" and self.tok.value == value

    def at_kw(self, word: str) -> bool:
        return self.tok.kind == "ident" and self.tok.value == word

    def expect(self, value: str) -> int:
        if not self.at(value):
            raise Unevaluable(f"expected {value!r} at offset {self.tok.pos}")
        t = self.advance()
        return t.pos + len(value)

    def expect_ident(self) -> str:
        if self.tok.kind != "ident":
            raise Unevaluable(f"expected a name at offset {self.tok.pos}")
        return str(self.advance().value)

    # expression grammar ---------------------------------------------------
    def expr(self) -> Any:
        c = self.binary(0)
        if self.at("?"):
            self.advance()
            a = self.expr()
            self.expect(":")
            b = self.expr()
            return ("cond", c, a, b)
        return c

    def binary(self, level: int) -> Any:
        if level == len(_BINARY_LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.tok.kind == "op" and self.tok.value in _BINARY_LEVELS[level]:
            op = self.advance().value
            right = self.binary(level + 1)
            left = ("binop", op, left, right)
        return left

    def unary(self) -> Any:
        if self.at("!") or self.at("-"):
            op = self.advance().value
            return ("unop", op, self.unary())
        return self.postfix(self.primary())

    def postfix(self, node: Any) -> Any:
        while True:
            if self.at("."):
                self.advance()
                if self.at("*"):
                    self.advance()
                    node = ("splat", node, self._splat_path(full=False))
                elif self.tok.kind == "num":
                    node = ("index", node, ("lit", self.advance().value))
                else:
                    node = ("attr", node, self.expect_ident())
            elif self.at("["):
                self.advance()
                if self.at("*"):
                    self.advance()
                    self.expect("]")
                    node = ("splat", node, self._splat_path(full=True))
                else:
                    key = self.expr()
                    self.expect("]")
                    node = ("index", node, key)
            else:
                return node

    def _splat_path(self, full: bool) -> list[Any]:
        """The traversals a splat applies to each element: attributes after
        ``.*``; attributes and indexes after ``[*]``."""
        path: list[Any] = []
        while True:
            if self.at("."):
                self.advance()
                if self.at("*"):
                    raise Unevaluable("a splat inside a splat")
                if self.tok.kind == "num":
                    path.append(("index", ("lit", self.advance().value)))
                else:
                    path.append(("attr", self.expect_ident()))
            elif full and self.at("["):
                self.advance()
                if self.at("*"):
                    raise Unevaluable("a splat inside a splat")
                key = self.expr()
                self.expect("]")
                path.append(("index", key))
            else:
                return path

    def primary(self) -> Any:
        t = self.tok
        if t.kind == "num":
            self.advance()
            return ("lit", t.value)
        if t.kind == "str":
            self.advance()
            parts = t.value
            if all(isinstance(p, str) for p in parts):
                return ("lit", "".join(parts))
            if len(parts) == 1:
                # "${x}" alone is x itself, not converted to a string (HCL's rule)
                return parts[0]
            return ("tmpl", parts)
        if t.kind == "ident":
            self.advance()
            name = t.value
            if name == "true":
                return ("lit", True)
            if name == "false":
                return ("lit", False)
            if name == "null":
                return ("lit", None)
            if self.at("("):
                return self.call(name)
            return ("ref", name)
        if self.at("("):
            self.advance()
            e = self.expr()
            self.expect(")")
            return e
        if self.at("["):
            self.advance()
            if self.at_kw("for"):
                return self.for_expr("]")
            items = []
            while not self.at("]"):
                items.append(self.expr())
                if not self.at(","):
                    break
                self.advance()
            self.expect("]")
            return ("list", items)
        if self.at("{"):
            self.advance()
            if self.at_kw("for"):
                return self.for_expr("}")
            pairs = []
            while not self.at("}"):
                k = self.expr()
                if not (self.at("=") or self.at(":")):
                    raise Unevaluable("expected = or : in an object")
                self.advance()
                v = self.expr()
                if k[0] == "ref":
                    k = ("lit", k[1])
                pairs.append((k, v))
                if self.at(","):
                    self.advance()
            self.expect("}")
            return ("obj", pairs)
        raise Unevaluable(f"unexpected token {t.value!r} at offset {t.pos}")

    def call(self, name: str) -> Any:
        self.expect("(")
        args = []
        expand = False
        while not self.at(")"):
            args.append(self.expr())
            if self.at("..."):
                self.advance()
                expand = True
            if not self.at(","):
                break
            self.advance()
        self.expect(")")
        return ("call", name, args, expand)

    def for_expr(self, close: str) -> Any:
        self.advance()  # "for"
        first = self.expect_ident()
        second = None
        if self.at(","):
            self.advance()
            second = self.expect_ident()
        if not self.at_kw("in"):
            raise Unevaluable("expected 'in' in a for expression")
        self.advance()
        coll = self.expr()
        self.expect(":")
        key_name, val_name = (first, second) if second else (None, first)
        if close == "]":
            body = self.expr()
            cond = self._for_if()
            self.expect("]")
            return ("for_list", key_name, val_name, coll, body, cond)
        kexpr = self.expr()
        self.expect("=>")
        vexpr = self.expr()
        group = False
        if self.at("..."):
            self.advance()
            group = True
        cond = self._for_if()
        self.expect("}")
        return ("for_obj", key_name, val_name, coll, kexpr, vexpr, group, cond)

    def _for_if(self) -> Any:
        if self.at_kw("if"):
            self.advance()
            return self.expr()
        return None


def parse(src: str) -> Any:
    """Parse one expression (the whole of ``src``)."""
    p = Parser(src)
    node = p.expr()
    if p.tok.kind != "eof":
        raise Unevaluable(f"unexpected {p.tok.value!r} at offset {p.tok.pos}")
    return node


def parse_template(src: str) -> Any:
    """Parse the inside of a quoted string (without its quotes) as a template."""
    parts, end = read_string(src + '"', 0, _interpolation)
    if end != len(src) + 1:
        raise EvalError("unescaped quote in string")
    return ("tmpl", parts)


def _interpolation(src: str, i: int) -> tuple[Any, int]:
    """The expression of a template's ``${...}`` from ``i`` (after ``${``): its node
    and the index after the closing ``}``."""
    parser = Parser(src, i)
    node = parser.expr()
    return node, parser.expect("}")
