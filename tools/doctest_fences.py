"""A griffe extension for the API reference: the ``>>>`` examples of docstrings become fenced
Python code. Unfenced, Markdown reads each ``>>>`` as three nested block quotes and runs the
example's lines together into one paragraph (``tests/test_docs_site.py`` checks the built pages)."""

from __future__ import annotations

from typing import Any

import griffe


def fence_doctests(text: str) -> str:
    """``text`` with every doctest block at the left margin (from a ``>>>`` line to the next blank
    line) inside a fenced ``pycon`` block; indented blocks are code in Markdown already."""
    out: list[str] = []
    inside = False
    for line in text.splitlines():
        if not inside and line.startswith(">>>"):
            out.append("```pycon")
            inside = True
        elif inside and not line.strip():
            out.append("```")
            inside = False
        out.append(line)
    if inside:
        out.append("```")
    return "\n".join(out)


class DoctestFences(griffe.Extension):
    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = fence_doctests(obj.docstring.value)
