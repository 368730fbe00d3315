"""wordstats: word and sentence statistics for plain text."""

from wordstats.counting import top_words, word_counts
from wordstats.text import normalize, sentences

__all__ = ["normalize", "sentences", "top_words", "word_counts"]
