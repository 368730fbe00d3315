"""Parse ``SELECT ... FROM t [WHERE] [GROUP BY] [ORDER BY] [LIMIT [OFFSET]]``.

Expression precedence, lowest first: ``OR``, ``AND``, ``NOT``, comparisons (``= <> < <= >
>= LIKE IN IS``), ``+ -``, ``* / %``, unary minus.
"""

from __future__ import annotations

from typing import Any

from csvq.errors import QuerySyntaxError
from csvq.lexer import Token, tokenize
from csvq.syntax import (
    Binary,
    Call,
    Column,
    Const,
    InList,
    IsNull,
    OrderItem,
    Select,
    SelectItem,
    Star,
    Unary,
)

_COMPARE = ("=", "<>", "!=", "<", "<=", ">", ">=")


class _Parser:
    def __init__(self, text: str):
        self.tokens = tokenize(text)
        self.i = 0

    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def next(self) -> Token:
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def is_(self, kind: str, value: str | None = None) -> bool:
        return self.tok.kind == kind and (value is None or self.tok.value == value)

    def accept(self, kind: str, value: str | None = None) -> bool:
        if self.is_(kind, value):
            self.i += 1
            return True
        return False

    def expect(self, kind: str, value: str | None = None) -> Token:
        if not self.is_(kind, value):
            want = value or kind
            got = self.tok.value or "end of query"
            raise QuerySyntaxError(f"expected {want!r}, got {got!r}", self.tok.pos)
        return self.next()

    def select(self) -> Select:
        self.expect("kw", "select")
        query = Select(items=[], distinct=self.accept("kw", "distinct"))
        query.items.append(self.select_item())
        while self.accept("op", ","):
            query.items.append(self.select_item())
        self.expect("kw", "from")
        self.expect("ident")
        if self.accept("kw", "where"):
            query.where = self.expr()
        if self.accept("kw", "group"):
            self.expect("kw", "by")
            query.group_by.append(self.expr())
            while self.accept("op", ","):
                query.group_by.append(self.expr())
        if self.accept("kw", "order"):
            self.expect("kw", "by")
            query.order_by.append(self.order_item())
            while self.accept("op", ","):
                query.order_by.append(self.order_item())
        if self.accept("kw", "limit"):
            query.limit = int(self.expect("num").value)
            if self.accept("kw", "offset"):
                query.offset = int(self.expect("num").value)
        if not self.is_("end"):
            raise QuerySyntaxError(f"unexpected {self.tok.value!r}", self.tok.pos)
        return query

    def select_item(self) -> SelectItem:
        if self.accept("op", "*"):
            return SelectItem(Star())
        expr = self.expr()
        alias = None
        if self.accept("kw", "as"):
            alias = self.expect("ident").value
        elif self.is_("ident"):
            alias = self.next().value
        return SelectItem(expr, alias)

    def order_item(self) -> OrderItem:
        expr = self.expr()
        if self.accept("kw", "desc"):
            return OrderItem(expr, True)
        self.accept("kw", "asc")
        return OrderItem(expr, False)

    def expr(self) -> Any:
        node = self.and_()
        while self.accept("kw", "or"):
            node = Binary("or", node, self.and_())
        return node

    def and_(self) -> Any:
        node = self.not_()
        while self.accept("kw", "and"):
            node = Binary("and", node, self.not_())
        return node

    def not_(self) -> Any:
        if self.accept("kw", "not"):
            return Unary("not", self.not_())
        return self.comparison()

    def comparison(self) -> Any:
        left = self.additive()
        if self.tok.kind == "op" and self.tok.value in _COMPARE:
            op = self.next().value
            return Binary("<>" if op == "!=" else op, left, self.additive())
        negated = self.accept("kw", "not")
        if self.accept("kw", "like"):
            node: Any = Binary("like", left, self.additive())
            return Unary("not", node) if negated else node
        if self.accept("kw", "in"):
            self.expect("op", "(")
            options = [self.expr()]
            while self.accept("op", ","):
                options.append(self.expr())
            self.expect("op", ")")
            return InList(left, tuple(options), negated)
        if negated:
            raise QuerySyntaxError("expected LIKE or IN after NOT", self.tok.pos)
        if self.accept("kw", "is"):
            negated = self.accept("kw", "not")
            self.expect("kw", "null")
            return IsNull(left, negated)
        return left

    def additive(self) -> Any:
        node = self.term()
        while self.tok.kind == "op" and self.tok.value in ("+", "-"):
            op = self.next().value
            node = Binary(op, node, self.term())
        return node

    def term(self) -> Any:
        node = self.unary()
        while self.tok.kind == "op" and self.tok.value in ("*", "/", "%"):
            op = self.next().value
            node = Binary(op, node, self.unary())
        return node

    def unary(self) -> Any:
        if self.accept("op", "-"):
            return Unary("-", self.unary())
        return self.primary()

    def primary(self) -> Any:
        tok = self.next()
        if tok.kind == "num":
            return Const(float(tok.value) if "." in tok.value else int(tok.value))
        if tok.kind == "str":
            return Const(tok.value)
        if tok.kind == "kw" and tok.value in ("true", "false", "null"):
            return Const({"true": True, "false": False, "null": None}[tok.value])
        if tok.kind == "op" and tok.value == "(":
            node = self.expr()
            self.expect("op", ")")
            return node
        if tok.kind == "ident":
            if self.accept("op", "("):
                return self.call(tok.value)
            return Column(tok.value)
        raise QuerySyntaxError(f"unexpected {tok.value or 'end of query'!r}", tok.pos)

    def call(self, name: str) -> Call:
        args: list[Any] = []
        if self.accept("op", "*"):
            args.append(Star())
        elif not self.is_("op", ")"):
            args.append(self.expr())
            while self.accept("op", ","):
                args.append(self.expr())
        self.expect("op", ")")
        return Call(name.lower(), tuple(args))


def parse(text: str) -> Select:
    """The query tree of ``text``."""
    return _Parser(text).select()
