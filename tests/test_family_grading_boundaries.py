"""Each family's answer grading at the edges of its tolerance, with known right and wrong answers.

The grading functions decide ``success`` and the ``outcome`` reward, so both sides of every
tolerance and every normalisation step are pinned here: a loosened or tightened rule fails.
"""

from __future__ import annotations

import pytest
from agentgym.envs.code.answers import MAX_ANSWER_CHARS as CODE_MAX_CHARS
from agentgym.envs.code.answers import (
    MAX_DIGITS,
    MAX_EXPONENT,
    answers_match,
    as_fraction,
    normalize,
)
from agentgym.envs.search.metrics import MAX_ANSWER_CHARS, exact_match, f1_score, normalize_answer
from agentgym.envs.users.credit import check_options, credit_turns, score_trajectory
from agentgym.envs.visual.grading import is_correct, normalise_text, parse_clock, parse_number

from agentgym.error import InvalidConfigError

# --- visual ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "truth", "kind", "tol", "want"),
    [
        ("3.6", "3.5", "number", 0.1, True),  # exactly at the tolerance
        ("3.61", "3.5", "number", 0.1, False),  # just past it
        ("3.39", "3.5", "number", 0.1, False),
        ("3.5", "3.5", "number", 0.0, True),
        ("3.5000000005", "3.5", "number", 0.0, True),  # inside the 1e-9 float slack
        ("3.5001", "3.5", "number", 0.0, False),
        ("-2", "-2", "int", 0.0, True),
        ("2", "-2", "int", 0.0, False),
        ("1,204 apples", "1204", "int", 0.0, True),
        ("12.0", "12", "int", 0.0, True),
        ("12.5", "12", "int", 0.0, False),
        ("none", "12", "int", 0.0, False),
        ("inf", "12", "number", 1e9, False),
        ('"XK4 - 92Q".', "xk4-92q", "text", 0.0, True),
        ("XK4-92", "xk4-92q", "text", 0.0, False),
        ("12:05", "0:05", "clock", 0.0, True),
        ("4:55", "4:55", "clock", 0.0, True),
        ("4:56", "4:55", "clock", 0.0, False),
        ("5:55", "4:55", "clock", 0.0, False),
        ("no time", "4:55", "clock", 0.0, False),
    ],
)  # fmt: skip
def test_visual_answers_match_by_type(given, truth, kind, tol, want):
    assert is_correct(given, truth, kind, tol) is want


def test_visual_parsers():
    assert parse_clock("24:00") == (0, 0) and parse_clock("25:00") is None
    assert parse_clock("3:60") is None and parse_clock("3:59") == (3, 59)
    assert parse_clock("11h30") == (11, 30) and parse_clock("0:00") == (0, 0)
    assert parse_number("about -.5 cm") == -0.5 and parse_number("1, 000") == 1000.0
    assert parse_number("+7") == 7.0 and parse_number("x") is None
    assert normalise_text("  Hello World!! ") == "helloworld"


# --- search ---------------------------------------------------------------------------------


def test_search_exact_match_and_f1_by_hand():
    assert normalize_answer("The  Kelvara-Systems, Inc.") == ["kelvarasystems", "inc"]
    assert exact_match("the Kelvara systems", ["Kelvara Systems", "other"]) == 1.0
    assert exact_match("Kelvara", ["Kelvara Systems"]) == 0.0
    # pred [kelvara], gold [kelvara, systems]: p = 1, r = 1/2 -> f1 = 2/3
    assert f1_score("Kelvara", ["Kelvara Systems"]) == pytest.approx(2 / 3)
    # pred [a b c] vs gold [b c d e]: common 2, p = 2/3, r = 1/2 -> 4/7
    assert f1_score("x b c", ["b c d e"]) == pytest.approx(4 / 7)
    assert f1_score("x b c", ["nothing", "b c d e", "b"]) == pytest.approx(4 / 7)  # the best
    assert f1_score("zzz", ["Kelvara"]) == 0.0
    assert f1_score("the", ["a"]) == 1.0  # both empty after normalisation
    assert f1_score("the", ["Kelvara"]) == 0.0
    assert f1_score("Kelvara", []) == 0.0


def test_search_answers_past_the_length_limit_score_zero():
    at_limit = "Kelvara" + " " * (MAX_ANSWER_CHARS - len("Kelvara"))
    assert len(at_limit) == MAX_ANSWER_CHARS
    assert exact_match(at_limit, ["Kelvara"]) == 1.0 and f1_score(at_limit, ["Kelvara"]) == 1.0
    over = at_limit + " "
    assert exact_match(over, ["Kelvara"]) == 0.0 and f1_score(over, ["Kelvara"]) == 0.0


# --- code / math ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expected", "given", "want"),
    [
        ("3/4", "0.75", True),
        ("3/4", "6/8", True),
        ("3/4", r"$\boxed{\frac{3}{4}}$", True),
        ("1/3", "0.3333333", True),  # within rel_tol 1e-6 of 1/3
        ("1/3", "0.3333", False),  # 1e-4 off
        ("1/3", "1/4", False),
        ("2", "2.0000001", True),
        ("2", "2.00001", False),
        ("1000", "x = 1,000.", True),
        ("1000", "1e3", True),
        ("-5", "5", False),
        ("0", "0.0000000001", True),  # the absolute floor 1e-9
        ("0", "0.00001", False),
        ("0", "0.000000001", True),  # exactly at the floor
        ("0", "0.0000000015", False),  # just past it
        ("sqrt(2)", "1.41421356237", True),
        ("sqrt(2)", "1.4142", False),
        ("pi", r"\pi", True),
        ("7", "", False),
        ("7", "   ", False),
    ],
)
def test_math_answers_match_at_the_tolerance(expected, given, want):
    assert answers_match(expected, given) is want


def test_math_answer_limits_and_exact_values():
    assert answers_match("7", "7" + " " * (CODE_MAX_CHARS - 1))
    assert not answers_match("7", "7" + " " * CODE_MAX_CHARS)
    assert normalize(r"$\boxed{\frac{3}{4}}$") == "(3)/(4)"
    assert as_fraction("1.5e3") == 1500 and as_fraction("-6/8") == as_fraction("-0.75")
    assert as_fraction("1/0") is None and as_fraction(".") is None
    assert as_fraction("9" * MAX_DIGITS) is not None and as_fraction("9" * (MAX_DIGITS + 1)) is None
    assert (
        as_fraction(f"1e{MAX_EXPONENT}") is not None
        and as_fraction(f"1e{MAX_EXPONENT + 1}") is None
    )
    assert as_fraction(f"1e-{MAX_EXPONENT}") is not None
    assert as_fraction("2" * MAX_DIGITS + "/" + "2" * MAX_DIGITS) == 1
    assert as_fraction("2" * (MAX_DIGITS + 1) + "/2") is None


# --- users: turn credit and trajectory scores -----------------------------------------------


def test_turn_credit_modes_by_hand():
    r = [0.0, 1.0, -1.0, 2.0]
    assert credit_turns(r, "raw") == r
    assert credit_turns(r, "equalized") == [0.5] * 4
    assert credit_turns(r, "exact") == [0.0, 1.0, 0.0, 1.0]
    # reward-to-go with gamma 0.5: from the back 2, -1 + 1 = 0, 1 + 0 = 1, 0 + 0.5 = 0.5
    assert credit_turns(r, "r2g", gamma=0.5) == [0.5, 1.0, 0.0, 2.0]
    assert credit_turns([], "equalized") == []


def test_trajectory_scores_by_hand():
    r = [1.0, 2.0, 4.0]
    assert score_trajectory(r, "sum") == 7.0
    assert score_trajectory(r, "mean") == pytest.approx(7 / 3)
    assert score_trajectory(r, "r2g", gamma=0.5) == 1.0 + 1.0 + 1.0
    assert score_trajectory([], "mean") == 0.0


def test_credit_options_are_checked_at_the_gamma_bounds():
    check_options("raw", "sum", 0.0)
    check_options("r2g", "r2g", 1.0)
    for gamma in (-0.01, 1.01):
        with pytest.raises(InvalidConfigError, match="credit_gamma"):
            check_options("raw", "sum", gamma)
    with pytest.raises(InvalidConfigError, match="turn_credit"):
        credit_turns([1.0], "shaped")
    with pytest.raises(InvalidConfigError, match="trajectory_score"):
        score_trajectory([1.0], "max")
