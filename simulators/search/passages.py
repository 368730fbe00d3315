"""BM25 over a user's passages: search, and open by title.

The index is the one ``bm25s`` builds (Lucene's BM25, ``k1=1.5``, ``b=0.75``: a sparse
column per term holding its score in every passage that has it), built here in one
streaming pass with numpy instead of Python lists of tokens, so a corpus of millions of
passages is indexed in minutes and a few GB (``benchmarks/bench_search_corpus.py`` compares
it with ``bm25s`` used directly). Terms and titles are looked up by a 64-bit hash in sorted
arrays, so a saved index (:mod:`.bm25cache`) opens memory-mapped in milliseconds and
processes share its pages. Ranking is :func:`~.ranking.top_k`: ties in corpus order.

Words are any script's (``\\w+``), case- and accent-folded (``Zürich`` finds ``Zurich``),
minus the encyclopedia's stopwords. A passage is indexed with its title.

    >>> index = PassageIndex.from_paragraphs(
    ...     [Paragraph("Zürich", "Zürich is the largest city in Switzerland."),
    ...      Paragraph("Bern", "Bern is the capital of Switzerland.")])
    >>> [index.passage(i).title for i in index.search("capital of switzerland")]
    ['Bern', 'Zürich']
    >>> index.lookup("zurich").passages
    (0,)
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import unicodedata
from array import array
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
from agentgym.simulators.search.encyclopedia import STOPWORDS
from agentgym.simulators.search.ranking import top_k
from agentgym.simulators.search.readers import Paragraph, parse_corpus_line

#: BM25 parameters (bm25s's defaults, Lucene's variant).
K1, B = 1.5, 0.75
#: Passages read at most for one title (a title shared by more is cut there).
MAX_TITLE_PASSAGES = 200
_WORD = re.compile(r"\w+")
#: Latin letters that carry their mark in the letter itself (no decomposition), folded too.
_LETTERS = str.maketrans({"ł": "l", "ø": "o", "đ": "d", "ð": "d", "þ": "th", "æ": "ae",
                          "œ": "oe", "ı": "i", "ħ": "h", "ŧ": "t"})  # fmt: skip


def fold(text: str) -> str:
    """Case- and accent-folded text (``Zürich`` -> ``zurich``, ``Łęcki`` -> ``lecki``);
    ASCII text is only lower-cased."""
    if text.isascii():
        return text.casefold()
    text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return text.casefold().translate(_LETTERS)


def words(text: str) -> list[str]:
    """The words BM25 indexes: folded, any script, stopwords dropped.

    >>> words("Where was the Zürich-born director of Amélie raised?")
    ['zurich', 'born', 'director', 'amelie', 'raised']
    """
    return [t for t in _WORD.findall(fold(text)) if t not in STOPWORDS]


def title_key(title: str) -> str:
    """A title with case, accents, punctuation and spacing ignored, for lenient ``open``."""
    return " ".join(_WORD.findall(fold(title)))


def hash64(text: str) -> int:
    """A 64-bit hash of a string (any string: lone surrogates included)."""
    raw = text.encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "little")


@dataclass(frozen=True)
class Lookup:
    """What ``open`` found: the passages of one article (in corpus order), or the titles a
    name could mean (``ambiguous``), or nothing (``candidates`` then holds similar titles)."""

    title: str = ""
    passages: tuple[int, ...] = ()
    candidates: tuple[str, ...] = ()
    ambiguous: bool = False


class Builder:
    """Collects each passage's term counts (term ids), then builds the BM25 arrays in numpy.

    BM25 needs only how often each term occurs in each passage, so a passage is counted
    (``collections.Counter``, in C) and only its distinct terms are looked up.
    """

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}
        self.terms = array("i")  # distinct terms of each passage, passage after passage
        self.counts = array("i")  # how often each occurs there
        self.distinct = array("i")  # distinct terms per passage
        self.lengths = array("i")  # words per passage
        self.title_hashes = array("Q")

    def add(self, title: str, text: str) -> None:
        counted = Counter(_WORD.findall(fold(f"{title}. {text}")))
        for stopword in STOPWORDS.intersection(counted):
            del counted[stopword]
        vocab = self.vocab
        ids = list(map(vocab.get, counted))
        if None in ids:
            for i, term in enumerate(counted):
                if ids[i] is None:
                    ids[i] = vocab[term] = len(vocab)
        self.terms.extend(ids)  # type: ignore[arg-type]
        self.counts.extend(counted.values())
        self.distinct.append(len(ids))
        self.lengths.append(sum(counted.values()))
        self.title_hashes.append(hash64(title_key(title)))

    def finish(self) -> dict[str, np.ndarray]:
        """The index as named arrays (what :mod:`.bm25cache` saves)."""
        lengths = np.frombuffer(self.lengths, dtype=np.int32).astype(np.int64)
        n, n_terms = int(lengths.size), len(self.vocab)
        terms = np.frombuffer(self.terms, dtype=np.int32)
        order = np.argsort(terms, kind="stable")  # by term; passages stay in corpus order
        term = terms[order]
        doc = np.repeat(np.arange(n, dtype=np.int32), np.frombuffer(self.distinct, dtype=np.int32))[
            order
        ]
        tf = np.frombuffer(self.counts, dtype=np.int32)[order].astype(np.float64)
        del order
        df = np.bincount(term, minlength=n_terms)
        idf = np.log1p((n - df + 0.5) / (df + 0.5))
        avg = float(lengths.mean()) if n and lengths.any() else 1.0
        norm = K1 * (1 - B + B * lengths / avg)
        data = (idf[term] * tf / (tf + norm[doc])).astype(np.float32)
        del tf, term
        hashes = np.fromiter((hash64(t) for t in self.vocab), dtype=np.uint64, count=n_terms)
        order = np.argsort(hashes, kind="stable")
        titles = np.frombuffer(self.title_hashes, dtype=np.uint64)
        title_order = np.argsort(titles, kind="stable")
        return {
            "data": data,
            "indices": doc,
            "indptr": np.concatenate(([0], np.cumsum(df))).astype(np.int64),
            "term_hashes": hashes[order],
            "term_ids": order.astype(np.int32),
            "title_hashes": titles[title_order],
            "title_order": title_order.astype(np.int64),
        }


class PassageIndex:
    """BM25 search over passages and lookup by title; passages come from ``passage_of``."""

    def __init__(
        self, arrays: dict[str, np.ndarray], count: int, passage_of: Callable[[int], Paragraph]
    ):
        self.count = int(count)
        self._a = arrays
        self._passage_of = passage_of

    @classmethod
    def from_paragraphs(cls, paragraphs: Iterable[Paragraph]) -> PassageIndex:
        """An index held in memory (a question's own context paragraphs)."""
        kept = list(paragraphs)
        builder = Builder()
        for p in kept:
            builder.add(p.title, p.text)
        return cls(builder.finish(), len(kept), kept.__getitem__)

    def __len__(self) -> int:
        return self.count

    def passage(self, i: int) -> Paragraph:
        """Passage ``i`` (its title and text)."""
        return self._passage_of(int(i))

    def _term_id(self, word: str) -> int:
        hashes = self._a["term_hashes"]
        h = np.uint64(hash64(word))
        at = int(np.searchsorted(hashes, h))
        if at < hashes.size and hashes[at] == h:
            return int(self._a["term_ids"][at])
        return -1

    def scores(self, query: str) -> np.ndarray | None:
        """BM25 score of every passage for ``query``; None when no word of it is indexed."""
        ids = [t for t in (self._term_id(w) for w in words(query)) if t >= 0]
        if not ids:
            return None
        data, indices, indptr = self._a["data"], self._a["indices"], self._a["indptr"]
        out = np.zeros(self.count, dtype=np.float32)
        for t in ids:  # np.add.at: about twice as fast as fancy-index += here (numpy 2)
            start, end = int(indptr[t]), int(indptr[t + 1])
            np.add.at(out, indices[start:end], data[start:end])
        return out

    def search(self, query: str, k: int = 3) -> list[int]:
        """The ``k`` best passages for ``query`` (ties in corpus order); none if no word is known."""
        scores = self.scores(query)
        if scores is None or k < 1:
            return []
        return [int(i) for i in top_k(scores, k)]

    def _titled(self, key: str) -> list[int]:
        hashes, order = self._a["title_hashes"], self._a["title_order"]
        h = np.uint64(hash64(key))
        lo, hi = np.searchsorted(hashes, h, "left"), np.searchsorted(hashes, h, "right")
        ids = sorted(int(i) for i in order[lo : min(hi, lo + MAX_TITLE_PASSAGES)])
        return [i for i in ids if title_key(self.passage(i).title) == key]

    def lookup(self, title: str) -> Lookup:
        """The article titled ``title``: exact title first, then ignoring case, accents and
        punctuation; several articles under one lenient key are listed; none, similar titles."""
        key = title_key(title)
        ids = self._titled(key) if key else []
        by_title: dict[str, list[int]] = {}
        for i in ids:
            by_title.setdefault(self.passage(i).title, []).append(i)
        if title in by_title:
            return Lookup(title, tuple(by_title[title]))
        if len(by_title) == 1:
            ((found, members),) = by_title.items()
            return Lookup(found, tuple(members))
        if by_title:
            return Lookup(candidates=tuple(sorted(by_title)), ambiguous=True)
        similar = dict.fromkeys(self.passage(i).title for i in self.search(title, k=5))
        return Lookup(candidates=tuple(t for t in similar if t))


class FilePassages:
    """Passages read on demand from a corpus file by byte offset (``os.pread``: thread-safe)."""

    def __init__(self, path: str, offsets: np.ndarray, lengths: np.ndarray):
        self.path = path
        self.offsets = offsets
        self.lengths = lengths
        self._fd: int | None = None
        self._lock = threading.Lock()

    def _descriptor(self) -> int:
        with self._lock:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_RDONLY)
            return self._fd

    def __call__(self, i: int) -> Paragraph:
        raw = os.pread(self._descriptor(), int(self.lengths[i]), int(self.offsets[i]))
        return parse_corpus_line(raw)

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
