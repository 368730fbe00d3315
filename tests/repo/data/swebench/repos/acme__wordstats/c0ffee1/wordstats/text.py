"""Text clean-up and sentence splitting."""

import re

_PUNCT = re.compile(r"[^\w\s'-]")
_END = re.compile(r"([.!?]+)\s+")


def normalize(text: str) -> list[str]:
    """Lower-case words with punctuation removed."""
    return _PUNCT.sub(" ", text.lower()).split()


def sentences(text: str) -> list[str]:
    """Sentences of ``text``, each with its closing punctuation, stripped."""
    out = []
    pos = 0
    for match in _END.finditer(text + " "):
        chunk = text[pos : match.end()].strip()
        if chunk:
            out.append(chunk)
        pos = match.end()
    return out
