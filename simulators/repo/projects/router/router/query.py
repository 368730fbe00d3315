"""Query strings: parse ``a=1&b=x&a=2`` into lists of values, and build them back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from urllib.parse import quote, unquote_plus


def parse_query(text: str, keep_blank: bool = False) -> dict[str, list[str]]:
    """Every key with its values in order. ``+`` is a space; ``a`` alone is ``a=""`` (kept
    only with ``keep_blank``, like blank values)."""
    text = text.removeprefix("?")
    out: dict[str, list[str]] = {}
    for part in text.split("&"):
        if not part:
            continue
        key, _, value = part.partition("=")
        key, value = unquote_plus(key), unquote_plus(value)
        if not value and not keep_blank:
            continue
        out.setdefault(key, []).append(value)
    return out


def first_value(query: Mapping[str, list[str]], key: str, default: str | None = None):
    values = query.get(key)
    return values[0] if values else default


def build_query(params: Mapping[str, str | int | Sequence[str | int] | None]) -> str:
    """``{"q": "a b", "tag": ["x", "y"]}`` -> ``q=a%20b&tag=x&tag=y``; keys sorted, None
    values left out."""
    parts = []
    for key in sorted(params):
        value = params[key]
        if value is None:
            continue
        values = value if isinstance(value, list | tuple) else [value]
        for item in values:
            parts.append(f"{quote(str(key), safe='')}={quote(str(item), safe='')}")
    return "&".join(parts)
