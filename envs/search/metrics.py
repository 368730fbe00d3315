"""Exact match and token F1 of a free-text answer, with SQuAD's normalisation.

Both lower-case the text, drop punctuation and the articles *a*, *an*, *the*, and collapse
whitespace; F1 is the harmonic mean of token precision and recall (bag of words). Against
several gold answers the best score counts. Linear in the answer's length; answers longer
than :data:`MAX_ANSWER_CHARS` score 0 without being read.

    >>> exact_match("the Paris", ["Paris"]), exact_match("Paris, France", ["Paris"])
    (1.0, 0.0)
    >>> round(f1_score("Paris France", ["Paris"]), 4)
    0.6667
"""

from __future__ import annotations

import string
from collections import Counter
from collections.abc import Iterable

#: Longer answers are wrong without being normalised.
MAX_ANSWER_CHARS = 2000
_ARTICLES = frozenset(("a", "an", "the"))
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> list[str]:
    """SQuAD normalisation as a token list: lower case, no punctuation or articles.

    >>> normalize_answer("  The  Kelvara-Systems, Inc. ")
    ['kelvarasystems', 'inc']
    """
    return [t for t in text.lower().translate(_PUNCTUATION).split() if t not in _ARTICLES]


def exact_match(prediction: str, golds: Iterable[str]) -> float:
    """1.0 when the normalised prediction equals a normalised gold answer, else 0.0."""
    if len(prediction) > MAX_ANSWER_CHARS:
        return 0.0
    pred = normalize_answer(prediction)
    return 1.0 if any(pred == normalize_answer(g) for g in golds) else 0.0


def f1_score(prediction: str, golds: Iterable[str]) -> float:
    """The best token F1 of the prediction against any gold answer."""
    if len(prediction) > MAX_ANSWER_CHARS:
        return 0.0
    pred = normalize_answer(prediction)
    best = 0.0
    for gold in golds:
        ref = normalize_answer(gold)
        if not pred or not ref:
            best = max(best, float(pred == ref))
            continue
        common = sum((Counter(pred) & Counter(ref)).values())
        if common:
            precision, recall = common / len(pred), common / len(ref)
            best = max(best, 2 * precision * recall / (precision + recall))
    return best
