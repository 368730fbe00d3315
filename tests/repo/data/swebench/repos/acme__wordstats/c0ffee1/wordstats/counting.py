"""Word frequencies."""

from collections import Counter

from wordstats.text import normalize


def word_counts(text: str) -> Counter:
    """How often each normalised word occurs."""
    return Counter(normalize(text))


def top_words(text: str, n: int = 3) -> list[tuple[str, int]]:
    """The ``n`` most frequent words, most frequent first; ties in alphabetical order."""
    counts = word_counts(text)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]), reverse=True)
    return ranked[:n]
