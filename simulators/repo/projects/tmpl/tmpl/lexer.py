"""Split template text into tokens: text, ``{{ output }}``, ``{% statement %}``.

Comments (``{# ... #}``) are dropped. A ``-`` just inside a delimiter (``{{-``, ``-%}``)
strips the whitespace on that side of the tag, newlines included.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tmpl.errors import TemplateSyntaxError

_OPEN = re.compile(r"\{\{|\{%|\{#")
_CLOSE = {"{{": "}}", "{%": "%}", "{#": "#}"}
_KIND = {"{{": "output", "{%": "statement", "{#": "comment"}


@dataclass(frozen=True)
class Token:
    kind: str  # "text", "output" or "statement"
    value: str
    line: int


def tokenize(source: str) -> list[Token]:
    """The tokens of ``source``, with whitespace control applied."""
    tokens: list[Token] = []
    pos = 0
    line = 1
    strip_next = False
    while pos < len(source):
        match = _OPEN.search(source, pos)
        end_of_text = match.start() if match else len(source)
        text = source[pos:end_of_text]
        if strip_next:
            text = text.lstrip()
        if match and source.startswith("-", match.end()):
            text = text.rstrip()
        if text:
            tokens.append(Token("text", text, line))
        line += source.count("\n", pos, end_of_text)
        if match is None:
            break
        opener = match.group()
        close = source.find(_CLOSE[opener], match.end())
        if close == -1:
            raise TemplateSyntaxError(f"unclosed {opener}", line)
        inner = source[match.end() : close]
        strip_next = inner.endswith("-")
        inner = inner.removeprefix("-").removesuffix("-").strip()
        if _KIND[opener] != "comment":
            if not inner:
                raise TemplateSyntaxError(f"empty {opener} {_CLOSE[opener]}", line)
            tokens.append(Token(_KIND[opener], inner, line))
        line += source.count("\n", match.start(), close)
        pos = close + len(_CLOSE[opener])
    return tokens
