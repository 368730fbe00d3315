"""Route patterns: ``/users/<int:id>/files/<path:rest>`` compiled to a regular expression.

A pattern's *specificity* orders competing routes: more static segments first, then more
specific converters, then fewer parameters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from router.converters import CONVERTERS, Converter
from router.errors import RouteError

_PARAM = re.compile(r"<(?:(?P<conv>[a-z]+):)?(?P<name>[A-Za-z_]\w*)>")


@dataclass(frozen=True)
class Pattern:
    template: str
    regex: re.Pattern[str]
    params: tuple[tuple[str, Converter], ...]
    static_segments: int

    def match(self, path: str) -> dict[str, Any] | None:
        """The converted parameters when ``path`` matches, else None."""
        found = self.regex.fullmatch(path)
        if found is None:
            return None
        values = {}
        for name, conv in self.params:
            try:
                values[name] = conv.to_python(found.group(name))
            except ValueError:
                return None
        return values

    def specificity(self) -> tuple[int, int, int]:
        weight = sum(conv.weight for _, conv in self.params)
        return (self.static_segments, weight, -len(self.params))

    def build(self, values: dict[str, Any]) -> str:
        """The path for ``values`` (each converted with its converter's ``to_url``)."""
        missing = [name for name, _ in self.params if name not in values]
        if missing:
            raise KeyError(missing[0])
        converters = dict(self.params)

        def repl(m: re.Match[str]) -> str:
            return converters[m.group("name")].to_url(values[m.group("name")])

        return _PARAM.sub(repl, self.template)


def compile_pattern(template: str) -> Pattern:
    """Compile a template. It must start with ``/``; parameter names must be unique."""
    if not template.startswith("/"):
        raise RouteError(f"pattern {template!r} must start with '/'")
    regex = ""
    params: list[tuple[str, Converter]] = []
    pos = 0
    for m in _PARAM.finditer(template):
        regex += re.escape(template[pos : m.start()])
        conv_name = m.group("conv") or "str"
        if conv_name not in CONVERTERS:
            raise RouteError(f"unknown converter {conv_name!r} in {template!r}")
        name = m.group("name")
        if any(existing == name for existing, _ in params):
            raise RouteError(f"parameter {name!r} appears twice in {template!r}")
        conv = CONVERTERS[conv_name]
        regex += f"(?P<{name}>{conv.regex})"
        params.append((name, conv))
        pos = m.end()
    regex += re.escape(template[pos:])
    static = sum(1 for seg in template.strip("/").split("/") if seg and "<" not in seg)
    return Pattern(template, re.compile(regex), tuple(params), static)
