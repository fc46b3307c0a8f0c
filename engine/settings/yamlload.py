"""The one YAML loader: bounded, so no file can make a command hang or crash.

Every YAML the tools read goes through here. A document is refused (a
``YamlBoundsError``, which is a ``yaml.MarkedYAMLError`` so every existing
``except yaml.YAMLError`` handles it) when it is nested deeper than
``MAX_DEPTH`` levels or would expand, once its aliases are followed, to more than
``MAX_NODES`` nodes (the "billion laughs" file: nine lines, 387 million items).
Both checks run on the composed node graph, before anything is constructed.

``tolerant_loader()`` reads any ``!tag`` (``!providers.EC2`` and others) as plain
data: for the readers of one ``.dreamrc`` section that do not care about the tags.
``bounded(Loader)`` adds the bounds to a loader class of one's own.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import yaml

MAX_DEPTH = 64
"""Nesting levels (mappings and lists inside each other), aliases followed."""
MAX_NODES = 100_000
"""Scalars, mappings and lists in a document once every alias is expanded."""


class YamlBoundsError(yaml.MarkedYAMLError):
    """A document past the bounds; ``problem`` says which, ``problem_mark`` where."""


MAX_CHARS = 8 * 1024 * 1024
"""Characters in one YAML text; settings and stack files are far below this."""


class _Bounded:
    """Mixin for a ``yaml`` loader class: size and flow nesting checked on the text
    (PyYAML's scanner is quadratic in ``[[[[…`` nesting), depth and expansion while
    composing."""

    _yl_depth = 0

    def __init__(self, stream: Any) -> None:
        if isinstance(stream, bytes | str):
            check_text(stream)
        super().__init__(stream)  # type: ignore[call-arg]

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._yl_depth += 1
        try:
            if self._yl_depth > MAX_DEPTH:
                event = self.peek_event()  # type: ignore[attr-defined]
                raise YamlBoundsError(
                    problem=f"nested deeper than {MAX_DEPTH} levels",
                    problem_mark=event.start_mark,
                )
            return super().compose_node(parent, index)  # type: ignore[misc]
        finally:
            self._yl_depth -= 1

    def compose_document(self) -> Any:
        node = super().compose_document()  # type: ignore[misc]
        check_expansion(node)
        return node


def check_text(text: str | bytes) -> None:
    """Refuse a text too large, or with ``[``/``{`` nested past ``MAX_DEPTH``, before
    the scanner sees it. Brackets in quotes and comments are skipped; brackets
    inside plain scalars (``^[a-z]+$``) close again, so they never count deep."""
    if len(text) > MAX_CHARS:
        raise YamlBoundsError(problem=f"larger than {MAX_CHARS // (1024 * 1024)} MiB")
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return
    depth = 0
    quote = ""
    line = 0
    prev = "\n"
    for ch in text:
        if ch == "\n":
            line += 1
            if quote == "#":
                quote = ""
        elif quote:
            if ch == quote and quote != "#":
                quote = ""
        elif ch in "'\"" and prev in " \t\n[{,:":
            quote = ch
        elif ch == "#" and prev in " \t\n":
            quote = "#"
        elif ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise YamlBoundsError(
                    problem=f"nested deeper than {MAX_DEPTH} levels",
                    problem_mark=yaml.Mark("<text>", 0, line, 0, None, 0),
                )
        elif ch in "]}":
            depth = max(0, depth - 1)
        prev = ch


def check_expansion(root: yaml.Node | None) -> None:
    """Refuse a node graph whose aliases expand past ``MAX_NODES`` or ``MAX_DEPTH``.

    Sizes are memoised per node, so the walk costs the size of the file, not of
    its expansion. Iterative: no recursion for a file to exhaust."""
    if root is None:
        return
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    on_path: set[int] = set()
    while stack:
        node, done = stack.pop()
        key = id(node)
        kids = _children(node)
        if done:
            on_path.discard(key)
            size[key] = 1 + sum(size.get(id(k), 1) for k in kids)
            depth[key] = 1 + max((depth.get(id(k), 1) for k in kids), default=0)
            if size[key] > MAX_NODES:
                raise YamlBoundsError(
                    problem=f"expands to more than {MAX_NODES} items once its aliases are "
                    "followed (an alias bomb?)",
                    problem_mark=node.start_mark,
                )
            if depth[key] > MAX_DEPTH:
                raise YamlBoundsError(
                    problem=f"nested deeper than {MAX_DEPTH} levels once its aliases are followed",
                    problem_mark=node.start_mark,
                )
            continue
        if key in size or key in on_path:
            if key in on_path:  # a recursive alias: never expandable
                raise YamlBoundsError(
                    problem="an alias refers to a node that contains it",
                    problem_mark=node.start_mark,
                )
            continue
        on_path.add(key)
        stack.append((node, True))
        stack.extend((k, False) for k in kids if id(k) not in size)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


@cache
def bounded(loader: type) -> type:
    """``loader`` with the bounds (depth, alias expansion) applied."""
    return type(f"Bounded{loader.__name__}", (_Bounded, loader), {})


def safe_load(text: str) -> Any:
    """``yaml.safe_load`` within the bounds."""
    return yaml.load(text, Loader=bounded(yaml.SafeLoader))


def compose(text: str) -> yaml.Node | None:
    """``yaml.compose`` (safe) within the bounds."""
    return yaml.compose(text, Loader=bounded(yaml.SafeLoader))  # type: ignore[no-any-return]


def problem(exc: yaml.YAMLError) -> tuple[str, int | None]:
    """What is wrong and on which 1-based line, for a message naming the file."""
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        return str(exc.problem or exc.context or exc), (mark.line + 1 if mark else None)
    return str(exc), None


@cache
def tolerant_loader() -> type:
    """A bounded ``yaml.SafeLoader`` subclass; a tagged node becomes its mapping, list
    or scalar."""

    class Loader(_Bounded, yaml.SafeLoader):
        pass

    def _any(loader: yaml.SafeLoader, _suffix: str, node: yaml.Node) -> Any:
        if isinstance(node, yaml.MappingNode):
            return loader.construct_mapping(node, deep=True)
        if isinstance(node, yaml.SequenceNode):
            return loader.construct_sequence(node, deep=True)
        return loader.construct_scalar(node)  # type: ignore[arg-type]

    Loader.add_multi_constructor("!", _any)
    return Loader
