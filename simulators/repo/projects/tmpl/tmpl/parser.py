"""Build the template tree from tokens: ``if``/``elif``/``else``, ``for``, ``set``."""

from __future__ import annotations

import re
from typing import Any

from tmpl.errors import TemplateSyntaxError
from tmpl.expressions import parse_expression
from tmpl.lexer import Token, tokenize
from tmpl.nodes import For, If, Output, Set, Text

_FOR = re.compile(r"^for\s+([A-Za-z_]\w*)\s+in\s+(.+)$")
_SET = re.compile(r"^set\s+([A-Za-z_]\w*)\s*=\s*(.+)$")


class _Parser:
    def __init__(self, tokens: list[Token]):
        self.tokens = tokens
        self.pos = 0

    def parse_body(self, ends: tuple[str, ...]) -> tuple[list[Any], str | None, Token | None]:
        """Nodes up to a statement whose first word is in ``ends``; returns the nodes, the
        statement text that ended the body and its token (None at the end of input)."""
        body: list[Any] = []
        while self.pos < len(self.tokens):
            tok = self.tokens[self.pos]
            self.pos += 1
            if tok.kind == "text":
                body.append(Text(tok.value))
            elif tok.kind == "output":
                body.append(Output(parse_expression(tok.value, tok.line), tok.line))
            else:
                word = tok.value.split()[0]
                if word in ends:
                    return body, tok.value, tok
                body.append(self.parse_statement(tok))
        return body, None, None

    def parse_statement(self, tok: Token) -> Any:
        word = tok.value.split()[0]
        if word == "if":
            return self.parse_if(tok)
        if word == "for":
            return self.parse_for(tok)
        if word == "set":
            match = _SET.match(tok.value)
            if match is None:
                raise TemplateSyntaxError("expected 'set name = expression'", tok.line)
            return Set(match.group(1), parse_expression(match.group(2), tok.line))
        raise TemplateSyntaxError(f"unknown statement {word!r}", tok.line)

    def parse_if(self, tok: Token) -> If:
        condition = parse_expression(tok.value[2:], tok.line)
        node = If([])
        while True:
            body, end, end_tok = self.parse_body(("elif", "else", "endif"))
            node.branches.append((condition, body))
            if end is None or end_tok is None:
                raise TemplateSyntaxError("'if' without 'endif'", tok.line)
            if end.startswith("elif"):
                condition = parse_expression(end[4:], end_tok.line)
                continue
            if end == "else":
                node.otherwise, end, _ = self.parse_body(("endif",))
                if end is None:
                    raise TemplateSyntaxError("'if' without 'endif'", tok.line)
            return node

    def parse_for(self, tok: Token) -> For:
        match = _FOR.match(tok.value)
        if match is None:
            raise TemplateSyntaxError("expected 'for name in expression'", tok.line)
        node = For(match.group(1), parse_expression(match.group(2), tok.line), [], line=tok.line)
        node.body, end, _ = self.parse_body(("else", "endfor"))
        if end == "else":
            node.otherwise, end, _ = self.parse_body(("endfor",))
        if end is None:
            raise TemplateSyntaxError("'for' without 'endfor'", tok.line)
        return node


def parse(source: str) -> list[Any]:
    """The template tree of ``source``."""
    parser = _Parser(tokenize(source))
    body, end, end_tok = parser.parse_body(())
    if end is not None and end_tok is not None:  # pragma: no cover - no ends at top level
        raise TemplateSyntaxError(f"unexpected {end!r}", end_tok.line)
    return body
