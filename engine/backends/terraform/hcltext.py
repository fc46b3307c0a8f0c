"""Reading HCL as text where no parser is wanted on a hot path."""

from __future__ import annotations


def block_body(text: str, start: int) -> str:
    """A block's text from just after its ``{`` to the matching ``}`` (braces
    inside strings not counted)."""
    depth, i, in_string = 1, start, False
    while i < len(text) and depth:
        c = text[i]
        if in_string:
            if c == "\\":
                i += 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        i += 1
    return text[start:i]


__all__ = ["block_body"]
