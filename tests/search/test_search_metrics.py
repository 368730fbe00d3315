"""Exact match and F1 with SQuAD normalisation: a table of known values."""

from __future__ import annotations

import pytest
from agentgym.envs.search.metrics import MAX_ANSWER_CHARS, exact_match, f1_score, normalize_answer


@pytest.mark.parametrize(
    ("prediction", "golds", "em", "f1"),
    [
        ("the Paris", ["Paris"], 1.0, 1.0),  # articles dropped
        ("PARIS.", ["Paris"], 1.0, 1.0),  # case and punctuation ignored
        ("  an   Paris ", ["paris"], 1.0, 1.0),  # spacing collapsed
        ("Paris France", ["Paris"], 0.0, 2 / 3),  # P 1/2, R 1
        ("Paris", ["Paris France"], 0.0, 2 / 3),  # P 1, R 1/2
        ("Kelvara Systems Inc", ["Kelvara Systems"], 0.0, 0.8),  # P 2/3, R 1
        ("Rome", ["Paris"], 0.0, 0.0),
        ("", ["Paris"], 0.0, 0.0),
        ("the", ["a"], 1.0, 1.0),  # both normalise to nothing
        ("Rising (film)", ["Rising", "Rising (film)"], 1.0, 1.0),  # best gold counts
        ("paris paris", ["paris"], 0.0, 2 / 3),  # bag of words: one common token
        ("1987", ["1987"], 1.0, 1.0),
        ("1,987", ["1987"], 1.0, 1.0),  # punctuation removed, as in SQuAD
    ],
)
def test_exact_match_and_f1_known_values(prediction, golds, em, f1):
    assert exact_match(prediction, golds) == em
    assert f1_score(prediction, golds) == pytest.approx(f1, abs=1e-12)


def test_normalisation_keeps_words_and_drops_articles_only_as_words():
    assert normalize_answer("The Theatre of a Thousand") == ["theatre", "of", "thousand"]


def test_overlong_answers_score_zero_without_being_read():
    huge = "Paris " * (MAX_ANSWER_CHARS // 6 + 1)
    assert exact_match(huge, ["Paris"]) == 0.0 and f1_score(huge, ["Paris"]) == 0.0
    assert exact_match("\udcff\x00 Paris", ["Paris"]) == 0.0  # odd text: no raise, no match
