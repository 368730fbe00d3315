"""The encyclopedia of a world: its articles, a BM25 index over passages, search and open.

``search(query)`` ranks passages with BM25 (``bm25s``; title words are part of each
passage) and returns the top ``k``; ``open(title)`` returns one article. Titles are matched
exactly first, then ignoring case, punctuation and spacing; a name shared by several
articles (a novel and its film adaptation) opens a disambiguation list.

Building a world, its articles and the index takes a fraction of a second
(``benchmarks/bench_search.py`` measures it); :func:`get_encyclopedia` keeps the last few
built per process, so resets reuse them.

    >>> enc = get_encyclopedia(0, alphabet=0)
    >>> person = enc.world[enc.world.by_kind["person"][0]]
    >>> hits = enc.search(person.name)
    >>> hits[0].title == person.title
    True
    >>> enc.open(person.title.upper()).article.title == person.title
    True
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import numpy as np
from agentgym.simulators.search.articles import Article, Passage, write_articles
from agentgym.simulators.search.ranking import top_k
from agentgym.simulators.search.world import World, build_world

from agentgym.error import DependencyMissingError

#: Words too common to help ranking (questions are full of them).
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "his",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "she",
        "that",
        "the",
        "their",
        "them",
        "they",
        "this",
        "to",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "whose",
        "why",
        "with",
    ]
)
_WORD = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lower-case alphanumeric words minus stopwords (linear in the text).

    >>> tokenize("Where was the director of The Last Rizer born?")
    ['director', 'last', 'rizer', 'born']
    """
    return [t for t in _WORD.findall(text.lower()) if t not in STOPWORDS]


def title_key(title: str) -> str:
    """A title with case, punctuation and spacing ignored, for lenient ``open``."""
    return " ".join(_WORD.findall(title.lower()))


@dataclass(frozen=True)
class Lookup:
    """What ``open`` found: an article, or the titles a name could mean (``ambiguous``), or
    nothing (``candidates`` then holds similar titles, if any)."""

    article: Article | None
    candidates: tuple[str, ...] = ()
    ambiguous: bool = False


class Encyclopedia:
    """Articles of one world, searchable by BM25 and openable by title."""

    def __init__(self, world: World):
        try:
            import bm25s
        except ImportError as exc:
            raise DependencyMissingError("bm25s", "pip install 'agentgym-suite[search]'") from exc

        self.world = world
        self.articles: list[Article] = write_articles(world)
        self.passages: list[Passage] = [p for a in self.articles for p in a.passages]
        self.by_title = {a.title: a for a in self.articles}
        self.by_key: dict[str, list[str]] = {}
        for a in self.articles:
            self.by_key.setdefault(title_key(a.title), []).append(a.title)
            name = self.world[a.entity_id].name
            if name != a.title:
                self.by_key.setdefault(title_key(name), []).append(a.title)
        corpus = [tokenize(f"{p.title}. {p.text}") for p in self.passages]
        self._retriever = bm25s.BM25()
        self._retriever.index(corpus, show_progress=False)
        self._vocab = self._retriever.vocab_dict

    def search(self, query: str, k: int = 3) -> list[Passage]:
        """The ``k`` best passages for ``query`` (ties in corpus order); none if no word is known."""
        known = [t for t in tokenize(query) if t in self._vocab]
        if not known or k < 1:
            return []
        scores = np.asarray(self._retriever.get_scores(known), dtype=np.float64)
        return [self.passages[int(i)] for i in top_k(scores, k)]

    def open(self, title: str) -> Lookup:
        """The article titled ``title`` (leniently matched), else the titles it could mean."""
        exact = self.by_title.get(title)
        if exact is not None:
            return Lookup(exact)
        matches = self.by_key.get(title_key(title), [])
        if len(matches) == 1:
            return Lookup(self.by_title[matches[0]])
        if matches:
            return Lookup(None, tuple(sorted(matches)), ambiguous=True)
        similar = dict.fromkeys(p.title for p in self.search(title, k=5))
        return Lookup(None, tuple(similar))

    def article_of(self, entity_id: int) -> Article:
        return self.articles[entity_id]


@functools.lru_cache(maxsize=6)
def get_encyclopedia(seed: int, alphabet: int = 0) -> Encyclopedia:
    """The encyclopedia of world ``seed`` (names from ``alphabet``), built once per process."""
    return Encyclopedia(build_world(seed, alphabet))
