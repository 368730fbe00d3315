"""A fast reader for the well-formed HTML that the local sites render, with a way out.

``html.parser`` is most of the cost of a text-mode web step: it is written for any HTML,
however broken, and tries many patterns at every ``<``. The sites' own pages are regular:
quoted or plain attribute values, no comments, scripts with a closing tag. :func:`feed_fast`
reads exactly that subset with one pattern per tag and reports to the same handler methods
(``handle_starttag``, ``handle_startendtag``, ``handle_endtag``, ``handle_data``) with the
same arguments ``html.parser.HTMLParser`` (``convert_charrefs=True``) would give for that
document. At the first thing outside the subset it stops and returns False, and the caller
parses the document with ``html.parser`` instead, so any document reads as before.
"""

from __future__ import annotations

import functools
import re
from html import unescape
from typing import Protocol

_WS = "[ \t\n\r\f]"  # only these: html.parser reads other whitespace in a tag differently
_NAME = r"[a-zA-Z_:@][-a-zA-Z0-9_:.@]*"
_QUOTED = "'[^']*'|\"[^\"]*\""
_PLAIN = r"""[^\s'"=<>`/]+"""
_VALUE = rf"{_QUOTED}|{_PLAIN}"
# in a tag, a plain value must end where html.parser's does (it reads on through ``/``...)
_START = re.compile(
    rf"<([a-zA-Z][a-zA-Z0-9-]*)((?:{_WS}+{_NAME}(?:{_WS}*={_WS}*(?:{_QUOTED}|{_PLAIN}(?=[ \t\n\r\f>])))?)*)"
    rf"{_WS}*(/?)>"
)
_ATTR = re.compile(rf"({_NAME})(?:{_WS}*={_WS}*({_VALUE}))?")  # within a matched tag
_END = re.compile(rf"</{_WS}*([a-zA-Z][-.a-zA-Z0-9:_]*){_WS}*>")
_RAW_TEXT = ("script", "style")  # their content is text up to their end tag, never parsed
_RAW_END = {tag: re.compile(rf"</\s*{tag}\s*>", re.I) for tag in _RAW_TEXT}


class TagHandler(Protocol):
    """What :func:`feed_fast` reports to (the handler methods of ``HTMLParser``)."""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None: ...

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None: ...

    def handle_endtag(self, tag: str) -> None: ...

    def handle_data(self, data: str) -> None: ...


@functools.lru_cache(maxsize=8192)
def _attrs(text: str) -> tuple[tuple[str, str | None], ...]:
    """A tag's attributes from their text (which repeats from page to page: read once)."""
    out: list[tuple[str, str | None]] = []
    for m in _ATTR.finditer(text):
        name, value = m.group(1), m.group(2)
        if value is not None and value[:1] in ("'", '"'):
            value = value[1:-1]
        if value:
            value = unescape(value)
        out.append((name.lower(), value))
    return tuple(out)


def feed_fast(source: str, handler: TagHandler) -> bool:
    """Report ``source`` to ``handler`` as ``html.parser`` would; False (the handler then
    holds a partial document) as soon as ``source`` leaves the subset this reader knows."""
    pos, size = 0, len(source)
    find = source.find
    while pos < size:
        lt = find("<", pos)
        if lt < 0:
            lt = size
        if lt > pos:
            handler.handle_data(unescape(source[pos:lt]))
        if lt == size:
            return True
        if source[lt + 1 : lt + 2] == "/":
            m = _END.match(source, lt)
            if m is None:
                return False
            handler.handle_endtag(m.group(1).lower())
            pos = m.end()
            continue
        m = _START.match(source, lt)
        if m is None:
            if source[lt : lt + 9].lower() != "<!doctype":
                return False
            close = find(">", lt + 9)
            if close < 0:
                return False
            pos = close + 1
            continue
        tag, attrs = m.group(1).lower(), list(_attrs(m.group(2)))
        pos = m.end()
        if m.group(3):
            handler.handle_startendtag(tag, attrs)
            continue
        handler.handle_starttag(tag, attrs)
        if tag in _RAW_TEXT:
            end = _RAW_END[tag].search(source, pos)
            if end is None:
                return False
            if end.start() > pos:
                handler.handle_data(source[pos : end.start()])
            handler.handle_endtag(tag)
            pos = end.end()
    return True
