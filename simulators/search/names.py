"""Invented names, drawn from a seed, in two disjoint alphabets.

Every word of every name starts with a syllable whose onset belongs to the name's alphabet:
alphabet 0 (the train worlds) and alphabet 1 (the test worlds) share no onset, so no word,
and hence no entity name, of a test world can appear in a train world. The remaining
syllables draw on all onsets, which keeps names varied.

    >>> import numpy as np
    >>> names = NameMaker(np.random.default_rng(0), alphabet=0)
    >>> word = names.word()
    >>> word[0].isupper() and word.lower().startswith(ALPHABETS[0])
    True
"""

from __future__ import annotations

import numpy as np

#: Word-initial onsets per alphabet (disjoint); a word of alphabet ``a`` starts with one of
#: ``ALPHABETS[a]``. Sorted longest first so ``str.startswith(tuple)`` tests are exact.
ALPHABETS: tuple[tuple[str, ...], ...] = (
    ("br", "dr", "kr", "tr", "th", "st", "vr", "b", "d", "k", "l", "m", "r", "t", "v"),
    ("fl", "gr", "pl", "sh", "sk", "ch", "gl", "f", "g", "h", "n", "p", "s", "z", "w"),
)
_INNER_ONSETS = ("b", "d", "k", "l", "m", "n", "r", "s", "t", "v", "z", "th", "nd")
_VOWELS = ("a", "e", "i", "o", "u", "a", "e", "i", "o", "ai", "ei")
_CODAS = ("", "", "", "", "n", "r", "l", "s", "k")
_FINALS = ("", "", "", "n", "r", "s", "l", "th", "x")


class NameMaker:
    """Draws pronounceable invented words from one alphabet with a numpy generator."""

    def __init__(self, rng: np.random.Generator, alphabet: int):
        if alphabet not in (0, 1):
            raise ValueError(f"alphabet must be 0 or 1, got {alphabet!r}")
        self.rng = rng
        self.onsets = ALPHABETS[alphabet]

    def _pick(self, options: tuple[str, ...]) -> str:
        return options[int(self.rng.integers(len(options)))]

    def word(self, syllables: int | None = None) -> str:
        """One capitalised word of 2-3 syllables (mostly 2) whose first onset is of this alphabet."""
        n = (2 if self.rng.random() < 0.75 else 3) if syllables is None else syllables
        parts = [self._pick(self.onsets) + self._pick(_VOWELS) + self._pick(_CODAS)]
        for _ in range(n - 1):
            parts.append(self._pick(_INNER_ONSETS) + self._pick(_VOWELS))
        parts.append(self._pick(_FINALS))
        return "".join(parts).capitalize()

    def unique_word(self, taken: set[str], syllables: int | None = None) -> str:
        """A word not in ``taken`` (added to it)."""
        while True:
            w = self.word(syllables)
            if w not in taken and len(w) <= 14:
                taken.add(w)
                return w
