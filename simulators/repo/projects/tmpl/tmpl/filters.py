"""Built-in filters: ``{{ value|name(args) }}`` calls ``FILTERS[name](value, *args)``."""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable
from typing import Any


def default(value: Any, fallback: Any = "", boolean: bool = False) -> Any:
    """``fallback`` when ``value`` is undefined (None) or, with ``boolean``, any false value."""
    if value is None or (boolean and not value):
        return fallback
    return value


def truncate(value: Any, length: int = 80, end: str = "...") -> str:
    """Cut text to ``length`` characters, ``end`` included, at a word boundary when one is
    near (within the last 5 characters)."""
    text = str(value)
    if len(text) <= length:
        return text
    cut = text[: length - len(end)]
    space = cut.rfind(" ")
    if space >= len(cut) - 5 and space > 0:
        cut = cut[:space]
    return cut.rstrip() + end


def join(value: Iterable[Any], sep: str = "") -> str:
    return sep.join(str(v) for v in value)


def pluralize(count: Any, singular: str = "", plural: str = "s") -> str:
    """``singular`` for a count of one, ``plural`` otherwise: ``item{{ n|pluralize }}``."""
    return singular if count == 1 else plural


def title(value: Any) -> str:
    """Capitalise every word (letters after an apostrophe stay lower case)."""
    words = str(value).split(" ")
    return " ".join(w[:1].upper() + w[1:].lower() for w in words)


def first(value: Any) -> Any:
    for item in value:
        return item
    return None


def last(value: Any) -> Any:
    items = list(value)
    return items[-1] if items else None


def round_(value: Any, digits: int = 0) -> Any:
    number = round(float(value), digits)
    return int(number) if digits == 0 else number


def batch(value: Iterable[Any], size: int) -> list[list[Any]]:
    """Groups of ``size`` items (the last may be shorter)."""
    items = list(value)
    if size < 1:
        raise ValueError("batch size must be at least 1")
    return [items[i : i + size] for i in range(0, len(items), size)]


FILTERS: dict[str, Callable[..., Any]] = {
    "upper": lambda v: str(v).upper(),
    "lower": lambda v: str(v).lower(),
    "title": title,
    "trim": lambda v: str(v).strip(),
    "length": lambda v: len(v),
    "default": default,
    "truncate": truncate,
    "join": join,
    "pluralize": pluralize,
    "first": first,
    "last": last,
    "round": round_,
    "batch": batch,
    "escape": lambda v: html.escape(str(v)),
    "sort": lambda v, reverse=False: sorted(v, reverse=reverse),
    "replace": lambda v, old, new: str(v).replace(old, new),
}
