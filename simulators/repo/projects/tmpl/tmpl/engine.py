"""Rendering: ``Environment`` holds filters and options, ``Template`` renders a tree."""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping
from typing import Any

from tmpl.context import Context
from tmpl.filters import FILTERS
from tmpl.nodes import For, If, Output, Set, Text
from tmpl.parser import parse


class LoopInfo:
    """The ``loop`` variable inside ``for``: index (from 1), index0, first, last, length."""

    def __init__(self, index0: int, length: int):
        self.index0 = index0
        self.index = index0 + 1
        self.length = length
        self.first = index0 == 0
        self.last = index0 == length - 1
        self.revindex = length - index0


class Environment:
    """Options shared by templates: extra filters, HTML auto-escaping, strict undefined."""

    def __init__(
        self,
        *,
        autoescape: bool = False,
        strict: bool = False,
        filters: Mapping[str, Callable[..., Any]] | None = None,
    ):
        self.autoescape = autoescape
        self.strict = strict
        self.filters = {**FILTERS, **(filters or {})}

    def from_string(self, source: str) -> Template:
        return Template(source, self)


class Template:
    """A parsed template; ``render(**data)`` returns the text."""

    def __init__(self, source: str, environment: Environment | None = None):
        self.environment = environment or Environment()
        self.tree = parse(source)

    def render(self, data: Mapping[str, Any] | None = None, **kwargs: Any) -> str:
        env = self.environment
        ctx = Context({**(data or {}), **kwargs}, env.filters, env.strict)
        out: list[str] = []
        self._render(self.tree, ctx, out)
        return "".join(out)

    def _render(self, nodes: list[Any], ctx: Context, out: list[str]) -> None:
        for node in nodes:
            if isinstance(node, Text):
                out.append(node.text)
            elif isinstance(node, Output):
                out.append(self._output(ctx.evaluate(node.expr)))
            elif isinstance(node, If):
                self._render_if(node, ctx, out)
            elif isinstance(node, For):
                self._render_for(node, ctx, out)
            elif isinstance(node, Set):
                ctx.set(node.name, ctx.evaluate(node.expr))

    def _output(self, value: Any) -> str:
        if value is None:
            return ""
        text = str(value)
        if isinstance(value, bool):
            text = text.lower()
        return html.escape(text) if self.environment.autoescape else text

    def _render_if(self, node: If, ctx: Context, out: list[str]) -> None:
        for condition, body in node.branches:
            if ctx.evaluate(condition):
                self._render(body, ctx, out)
                return
        self._render(node.otherwise, ctx, out)

    def _render_for(self, node: For, ctx: Context, out: list[str]) -> None:
        value = ctx.evaluate(node.iterable)
        items = list(value.items()) if isinstance(value, Mapping) else list(value or [])
        if not items:
            self._render(node.otherwise, ctx, out)
            return
        for index, item in enumerate(items):
            ctx.push({node.target: item, "loop": LoopInfo(index, len(items))})
            try:
                self._render(node.body, ctx, out)
            finally:
                ctx.pop()


def render(source: str, data: Mapping[str, Any] | None = None, **kwargs: Any) -> str:
    """Render ``source`` once with the default environment."""
    return Template(source).render(data, **kwargs)
