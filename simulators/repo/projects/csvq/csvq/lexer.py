"""Tokens of the query language."""

from __future__ import annotations

import re
from dataclasses import dataclass

from csvq.errors import QuerySyntaxError

KEYWORDS = {
    "select", "distinct", "from", "where", "group", "by", "order", "asc", "desc", "limit",
    "offset", "and", "or", "not", "like", "in", "is", "null", "as", "true", "false",
}  # fmt: skip

_TOKEN = re.compile(
    r"(?P<ws>\s+)|(?P<num>\d+\.\d*|\.\d+|\d+)|(?P<str>'(?:[^']|'')*')"
    r"|(?P<ident>[A-Za-z_][A-Za-z0-9_]*)|(?P<quoted>\"[^\"]+\")"
    r"|(?P<op><=|>=|<>|!=|=|<|>|\+|-|\*|/|%|\(|\)|,)"
)


@dataclass(frozen=True)
class Token:
    kind: str  # "num", "str", "ident", "kw", "op", "end"
    value: str
    pos: int


def tokenize(text: str) -> list[Token]:
    tokens = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise QuerySyntaxError(f"unexpected character {text[pos]!r}", pos)
        kind = match.lastgroup or ""
        value = match.group()
        if kind == "ident" and value.lower() in KEYWORDS:
            tokens.append(Token("kw", value.lower(), pos))
        elif kind == "quoted":
            tokens.append(Token("ident", value[1:-1], pos))
        elif kind == "str":
            tokens.append(Token("str", value[1:-1].replace("''", "'"), pos))
        elif kind != "ws":
            tokens.append(Token(kind, value, pos))
        pos = match.end()
    tokens.append(Token("end", "", len(text)))
    return tokens
