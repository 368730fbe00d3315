"""Expressions inside tags: names, literals, filters, comparisons, ``and``/``or``/``not``.

Grammar (lowest precedence first)::

    expr    := or
    or      := and ("or" and)*
    and     := not ("and" not)*
    not     := "not" not | compare
    compare := filtered (("==" | "!=" | "<" | "<=" | ">" | ">=" | "in") filtered)?
    filtered:= atom ("|" NAME ("(" args ")")?)*
    atom    := NUMBER | STRING | "true" | "false" | "none" | NAME ("." NAME | "[" expr "]")*
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tmpl.errors import TemplateSyntaxError

_TOKEN = re.compile(
    r"\s*(?:(\d+\.\d+|\d+)|(\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*')"
    r"|(==|!=|<=|>=|<|>|\||\(|\)|\[|\]|\.|,)|([A-Za-z_]\w*))"
)
_KEYWORDS = {"and", "or", "not", "in", "true", "false", "none"}


@dataclass(frozen=True)
class Literal:
    value: Any


@dataclass(frozen=True)
class Name:
    name: str


@dataclass(frozen=True)
class Attr:
    target: Any
    name: str


@dataclass(frozen=True)
class Item:
    target: Any
    key: Any


@dataclass(frozen=True)
class Filter:
    target: Any
    name: str
    args: tuple[Any, ...]


@dataclass(frozen=True)
class Compare:
    op: str
    left: Any
    right: Any


@dataclass(frozen=True)
class BoolOp:
    op: str  # "and" / "or"
    left: Any
    right: Any


@dataclass(frozen=True)
class Not:
    operand: Any


def _lex(text: str, line: int) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise TemplateSyntaxError(f"unexpected {text[pos:].strip()!r}", line)
        number, string, op, word = match.groups()
        if number is not None:
            out.append(("num", number))
        elif string is not None:
            out.append(("str", string))
        elif op is not None:
            out.append(("op", op))
        else:
            out.append(("kw" if word in _KEYWORDS else "name", word))
        pos = match.end()
    return out


class _Parser:
    def __init__(self, text: str, line: int):
        self.tokens = _lex(text, line)
        self.pos = 0
        self.line = line

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, kind: str | None = None, value: str | None = None) -> tuple[str, str]:
        tok = self.peek()
        if tok is None or (kind and tok[0] != kind) or (value and tok[1] != value):
            want = value or kind or "more input"
            got = tok[1] if tok else "the end"
            raise TemplateSyntaxError(f"expected {want!r}, got {got!r}", self.line)
        self.pos += 1
        return tok

    def accept(self, kind: str, value: str) -> bool:
        if self.peek() == (kind, value):
            self.pos += 1
            return True
        return False

    def parse_or(self) -> Any:
        node = self.parse_and()
        while self.accept("kw", "or"):
            node = BoolOp("or", node, self.parse_and())
        return node

    def parse_and(self) -> Any:
        node = self.parse_not()
        while self.accept("kw", "and"):
            node = BoolOp("and", node, self.parse_not())
        return node

    def parse_not(self) -> Any:
        if self.accept("kw", "not"):
            return Not(self.parse_not())
        return self.parse_compare()

    def parse_compare(self) -> Any:
        left = self.parse_filtered()
        tok = self.peek()
        if tok and (tok[0] == "op" and tok[1] in ("==", "!=", "<", "<=", ">", ">=")):
            self.pos += 1
            return Compare(tok[1], left, self.parse_filtered())
        if tok == ("kw", "in"):
            self.pos += 1
            return Compare("in", left, self.parse_filtered())
        return left

    def parse_filtered(self) -> Any:
        node = self.parse_atom()
        while self.accept("op", "|"):
            name = self.take("name")[1]
            args: list[Any] = []
            if self.accept("op", "(") and not self.accept("op", ")"):
                args.append(self.parse_or())
                while self.accept("op", ","):
                    args.append(self.parse_or())
                self.take("op", ")")
            node = Filter(node, name, tuple(args))
        return node

    def parse_atom(self) -> Any:
        kind, value = self.take()
        if kind == "num":
            return Literal(float(value) if "." in value else int(value))
        if kind == "str":
            return Literal(value[1:-1].encode().decode("unicode_escape"))
        if kind == "kw" and value in ("true", "false", "none"):
            return Literal({"true": True, "false": False, "none": None}[value])
        if kind == "op" and value == "(":
            node = self.parse_or()
            self.take("op", ")")
            return node
        if kind != "name":
            raise TemplateSyntaxError(f"unexpected {value!r}", self.line)
        node: Any = Name(value)
        while True:
            if self.accept("op", "."):
                node = Attr(node, self.take("name")[1])
            elif self.accept("op", "["):
                node = Item(node, self.parse_or())
                self.take("op", "]")
            else:
                return node


def parse_expression(text: str, line: int = 1) -> Any:
    """Parse one whole expression; trailing tokens are an error."""
    parser = _Parser(text, line)
    node = parser.parse_or()
    if parser.peek() is not None:
        raise TemplateSyntaxError(f"unexpected {parser.peek()[1]!r}", line)  # type: ignore[index]
    return node
