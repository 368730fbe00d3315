"""Make model-written text safe to echo: no lone surrogates.

A model can emit half of a UTF-16 surrogate pair (``"\\ud83d"`` is half an emoji), either raw
or as a JSON escape inside a tool call. Python strings hold such a code point happily, but it
has no UTF-8 encoding, so any text that carries it breaks ``str.encode()``, tokenizers, HTTP
replies and msgpack. Everything that echoes model text back (an observation, an error message,
a header) passes it through :func:`safe_text` first, so observations are always valid UTF-8.

The replacement is U+FFFD (the Unicode replacement character), the same thing a UTF-8 decoder
with ``errors="replace"`` gives for a broken sequence, so a model sees the usual marker of
"undecodable text" and the rest of its string is kept unchanged.
"""

from __future__ import annotations

import re

__all__ = ["REPLACEMENT", "has_lone_surrogate", "safe_text"]

REPLACEMENT = "\ufffd"
"""What a lone surrogate becomes in echoed text."""

_SURROGATE = re.compile("[\ud800-\udfff]")


def has_lone_surrogate(text: str) -> bool:
    """True when ``text`` holds a code point in U+D800..U+DFFF (it cannot be UTF-8 encoded).

    Python ``str`` never holds a *valid* surrogate pair (that would be one astral code
    point), so every such code point is a lone half.
    """
    return _SURROGATE.search(text) is not None


def safe_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD; other characters unchanged.

    Returns the same object when there is nothing to replace, so it is cheap on the common
    path. ``safe_text(s).encode("utf-8")`` never raises.

    >>> safe_text("x\\ud800y")
    'x\\ufffdy'
    >>> safe_text("caf\\u00e9 \\U0001f600")
    'caf\\xe9 \\U0001f600'
    """
    if text.isascii() or not has_lone_surrogate(text):
        return text
    return _SURROGATE.sub(REPLACEMENT, text)
