"""Text helpers of the scripted users: tokens, numbers, and the screens every message passes.

The scripted core reads agent messages with simple, deterministic rules (word tokens,
keyword stems, regexes). These helpers are shared by every user so that all of them treat
empty, huge, foreign-language and prompt-injection messages the same way.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_WORD_RE = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_NUMBER_RE = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w])")

#: Longest message a user reads; longer ones get an in-character complaint and reveal nothing.
MAX_READ_CHARS = 2000

_INJECTION_RE = re.compile(
    r"ignore\s+(?:all\s+|any\s+|your\s+|the\s+|previous\s+|prior\s+|above\s+)*"
    r"(?:instructions|rules|prompt|directions)"
    r"|system\s+prompt|developer\s+mode|jailbreak"
    r"|you\s+are\s+now\s+(?:an?\s+)?(?:ai|assistant|system|developer|unrestricted|dan)\b"
    r"|(?:reveal|print|dump|show|tell\s+me)\s+(?:me\s+)?(?:all\s+|every\s+)?(?:of\s+)?"
    r"(?:your|the)\s+(?:hidden|secret|private|instructions|system)"
    r"|hidden\s+(?:answer|preferences|facts|goal|profile)",
    re.IGNORECASE,
)


def tokens(text: str) -> list[str]:
    """Lower-case word tokens, each also stripped of a plural ``s`` (``dogs`` -> ``dog``)."""
    out = []
    for word in _WORD_RE.findall(text.lower()):
        out.append(word)
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            out.append(word[:-1])
    return out


def numbers(text: str) -> list[float]:
    """Every number written in digits, in order of appearance."""
    out = []
    for m in _NUMBER_RE.findall(text):
        try:
            out.append(float(m))
        except ValueError:  # pragma: no cover - the regex only matches numbers
            continue
    return out


def is_injection(text: str) -> bool:
    """True for prompt-injection attempts aimed at the simulated user."""
    return bool(_INJECTION_RE.search(text))


def is_foreign(text: str) -> bool:
    """True when most letters are not ASCII (the scripted users speak English only)."""
    letters = [c for c in text if c.isalpha()]
    if len(letters) < 2:
        return False
    ascii_letters = sum(1 for c in letters if c.isascii())
    return ascii_letters / len(letters) < 0.5


def normalise(text: str) -> str:
    """Lower-case, single-spaced text for substring checks."""
    return " ".join(_WORD_RE.findall(text.lower()))


def mentions(text: str, value: str) -> bool:
    """Whether ``value`` (a fact's value) appears in ``text`` as whole words."""
    needle = normalise(value)
    if not needle:
        return False
    hay = f" {normalise(text)} "
    return f" {needle} " in hay


def mentioned(text: str, values: Sequence[str]) -> list[str]:
    """The ``values`` that appear in ``text`` as whole words (``text`` normalised once)."""
    hay = f" {normalise(text)} "
    return [v for v in values if (n := normalise(v)) and f" {n} " in hay]


def mentions_number(text: str, value: float) -> bool:
    """Whether the number ``value`` appears in ``text`` (``12`` matches ``12.0``)."""
    return any(abs(n - value) < 1e-9 for n in numbers(text))
