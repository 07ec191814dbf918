"""mkdocs hooks of the documentation site (``hooks:`` in mkdocs.yml).

``on_page_content``: a code block of a doctest (``>>>`` prompts, outputs) gets a ``data-copy``
attribute holding its code alone: the prompts and the outputs left out, so that the copy button
(mkdocs-material copies ``data-copy`` when a block has one) gives lines that paste into a script.
"""

from __future__ import annotations

import html
import re
from typing import Any

_BLOCK = re.compile(r"<pre([^>]*)>(.*?)</pre>", re.DOTALL)
_TAG = re.compile(r"<[^>]+>")


def code_of_doctest(text: str) -> str | None:
    """The code of a doctest's text (``>>> `` and ``... `` lines without their prompts), or None
    if ``text`` has no prompt."""
    lines = text.splitlines()
    if not any(line.startswith(">>>") for line in lines):
        return None
    code = [line[4:] if len(line) > 3 else "" for line in lines if line.startswith((">>>", "..."))]
    return "\n".join(code).rstrip() + "\n"


def on_page_content(content: str, **kwargs: Any) -> str:
    def mark(match: re.Match[str]) -> str:
        attrs, inner = match.group(1), match.group(2)
        if "data-copy" in attrs:
            return match.group(0)
        code = code_of_doctest(html.unescape(_TAG.sub("", inner)))
        if code is None:
            return match.group(0)
        return f'<pre{attrs} data-copy="{html.escape(code, quote=True)}">{inner}</pre>'

    return _BLOCK.sub(mark, content)
