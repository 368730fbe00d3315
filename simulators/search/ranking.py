"""The search family's one ranking rule: best score first, equal scores in corpus order.

Both indexes (the generated encyclopedia's and a user's corpus) rank with :func:`top_k`, so
a query gives the same passages, in the same order, every time and on every machine.
``numpy.argpartition`` alone picks an arbitrary subset of the passages tied at the cut, so
the candidates are taken by value instead: every passage scoring at least the k-th best
score, then a stable sort. Linear in the corpus plus ``c log c`` for the ``c`` candidates.

    >>> top_k(np.array([0.5, 2.0, 0.5, 0.5, 0.0]), 3).tolist()
    [1, 0, 2]
    >>> top_k(np.array([0.0, 0.0]), 2).tolist()
    []
"""

from __future__ import annotations

import numpy as np


def top_k(scores: np.ndarray, k: int, *, positive_only: bool = True) -> np.ndarray:
    """Indices of the ``k`` best ``scores``, best first, ties by index (corpus order).

    With ``positive_only`` (the default), passages scoring 0 or less (no query word) are
    left out, so fewer than ``k`` may come back.
    """
    n = int(scores.shape[0])
    k = min(int(k), n)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    if k < n:
        kth = np.partition(scores, n - k)[n - k]  # the k-th best value
        candidates = np.flatnonzero(scores >= kth)
    else:
        candidates = np.arange(n)
    order = np.argsort(-scores[candidates], kind="stable")  # stable: ties keep index order
    best = candidates[order[:k]].astype(np.int64)
    if positive_only:
        best = best[scores[best] > 0]
    return best
