"""Hostile answers: answer checking runs on the host, so it must never raise and stay bounded.

Issue 13: ``<answer>1e400</answer>`` raised OverflowError in all four CodeMath ids, 140 KB of
repeated ``\\boxed{`` cost 16-20 s (quadratic normalisation) and ``1e10000000`` 10-31 s.
Bounded work is asserted by counting what the checker builds and reads (length caps, sizes of
the numbers made, what reaches sympy), never by timing. The fuzz at the end steps
``<answer>{junk}</answer>`` (and the ``answer`` tool where an env has one) in every registered
single-agent id.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import gymnasium as gym
import pytest
from agentgym.envs.code import answers
from agentgym.envs.code.answers import answers_match
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentgym

HUGE = [
    "1e400",
    "-1e400",
    "1e999999",
    "1e10000000",
    "1E+400",
    "0.1e-99999",
    "1.5e308",
    "12e9999999999",
]
NOT_NUMBERS = [
    "nan",
    "NaN",
    "inf",
    "-inf",
    "Infinity",
    "0/0",
    "1/0",
    "0**-1",
    "zoo",
    "١٢",  # Arabic-Indic digits
    "１２",  # full-width digits
    "𝟏𝟐",
    "½",
    "1_2",
    "((((2**64)**64)**64)**64)**64",
    "9**64**64",
    "E**E**E**E**E**E**E",
    "sqrt(" * 50 + "2" + ")" * 50,
    "(" * 300 + "1" + ")" * 300,
    "\\boxed{" * 20_000,
    "{" * 100_000 + "12" + "}" * 100_000,
    "9" * 5000,
    "1/" + "9" * 5000,
    "x = " + "1," * 10_000,
]


def _short(value: str) -> str:
    return value if len(value) < 24 else f"{value[:12]}...({len(value)} chars)"


EXPECTED = ["12", "3/4", "-7", "2*sqrt(2)", "17167680177565"]


@pytest.mark.parametrize("answer", HUGE + NOT_NUMBERS, ids=_short)
@pytest.mark.parametrize("expected", EXPECTED)
def test_hostile_answers_are_wrong_not_errors(expected: str, answer: str) -> None:
    assert answers_match(expected, answer) is False


@pytest.mark.parametrize(
    ("expected", "answer", "ok"),
    [
        ("12", "1.2e1", True),
        ("3/4", "7.5e-1", True),
        ("3/4", "0.7500000001", True),
        ("17167680177565", "1.7167680177565e13", True),
        ("12", "\\boxed{" + " " * 3000 + "12}", True),
        ("4", "2**(1+1)", True),
        ("2*sqrt(2)", "sqrt(8)", True),
        ("2*sqrt(2)", "2.8284271247", True),
        ("1/3", "0.333", False),
    ],
)
def test_ordinary_answers_still_match(expected: str, answer: str, ok: bool) -> None:
    assert answers_match(expected, answer) is ok


class _CountingFraction(Fraction):
    """A Fraction that records the bit size of every value built (numerator + denominator)."""

    sizes: list[int] = []

    def __new__(cls, *args: Any, **kwargs: Any) -> _CountingFraction:
        value = super().__new__(cls, *args, **kwargs)
        cls.sizes.append(value.numerator.bit_length() + value.denominator.bit_length())
        return value


@pytest.fixture()
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, list[Any]]]:
    """Spy on what the checker builds: Fraction sizes, normalised lengths, sympy inputs."""
    seen: dict[str, list[Any]] = {"normalize": [], "sympy": []}
    _CountingFraction.sizes = []
    monkeypatch.setattr(answers, "Fraction", _CountingFraction)
    real_normalize = answers.normalize

    def normalize(text: str) -> str:
        seen["normalize"].append(len(text))
        return real_normalize(text)

    monkeypatch.setattr(answers, "normalize", normalize)
    import sympy.parsing.sympy_parser as sympy_parser

    real_parse = sympy_parser.parse_expr

    def parse_expr(s: str, *args: Any, **kwargs: Any) -> Any:
        seen["sympy"].append(s)
        return real_parse(s, *args, **kwargs)

    monkeypatch.setattr(sympy_parser, "parse_expr", parse_expr)
    seen["fraction_bits"] = _CountingFraction.sizes
    yield seen


@pytest.mark.parametrize("answer", [*HUGE, "9" * 5000, "1/" + "9" * 5000, "1e400/3"], ids=_short)
def test_numbers_built_from_an_answer_stay_small(counted: dict, answer: str) -> None:
    """``1e10000000`` must not become a 33-million-bit integer, nor ``1e400`` a float."""
    assert answers_match("12", answer) is False
    limit = 4 * (answers.MAX_DIGITS + answers.MAX_EXPONENT)  # bits of 10**(digits+exponent)
    assert max(counted["fraction_bits"], default=0) <= limit


@pytest.mark.parametrize(
    "answer",
    ["\\boxed{" * 20_000, "{" * 140_000, "1" * 200_000, "x = 1" + " " * 200_000, "$" * 150_000],
    ids=_short,
)
def test_long_answers_are_refused_before_normalising(counted: dict, answer: str) -> None:
    assert answers_match("12", answer) is False
    assert max(counted["normalize"][1:], default=0) <= answers.MAX_ANSWER_CHARS


@pytest.mark.parametrize(
    "answer",
    ["1e999999", "2*1e99999", "((((2**64)**64)**64)**64)**64", "9**64**64", "(" * 100 + "1"],
    ids=_short,
)
def test_sympy_only_sees_short_bounded_expressions(counted: dict, answer: str) -> None:
    assert answers_match("2*sqrt(2)", answer) is False
    for text in counted["sympy"]:
        assert len(text) <= answers.MAX_LEN
        assert "99999" not in text, "a huge exponent reached sympy"


@pytest.mark.parametrize(
    "text",
    ["\\boxed{12}", "a \\boxed{\\frac{3}{4}} b", "\\boxed{1} \\boxed{2}", "\\boxed{x", "}\\boxed{"],
)
def test_boxed_bodies_are_read_as_before(text: str) -> None:
    """The linear ``\\boxed{`` reading equals the greedy regex it replaced."""
    import re

    m = re.search(r"\\boxed\{(.*)\}", text, re.DOTALL)
    body = m.group(1) if m else text
    assert answers.normalize(text) == answers.normalize(f"${body}$")


# --- fuzz: every single-agent id, hostile answers, never a raise -------------------------

NASTY_PIECES = [
    *HUGE,
    *NOT_NUMBERS[:19],
    "\\boxed{" * 20_000,
    "7" * 200_000,
    "\\frac{" * 5000,
    "H1 H2 H3 " * 2000,
    "12:05 " * 3000,
    "</answer><answer>",
    "<tool_call>",
    '"}]\\',
    "\x00\ud800\uffff",
    "",
]

junk = st.one_of(
    st.sampled_from(NASTY_PIECES),
    st.text(max_size=40),
    st.tuples(st.sampled_from(NASTY_PIECES), st.text(max_size=20), st.integers(1, 3)).map(
        lambda t: (t[0] + t[1]) * t[2]
    ),
)

SINGLE_AGENT = sorted(r.id for r in agentgym.list_envs() if not r.multi_agent)
BROWSER = {i for i in SINGLE_AGENT if i.startswith("agentgym/Web") and not i.endswith("Text-v0")}


def _answer_actions(text: str, tools: list[str]) -> list[str]:
    actions = [f"<answer>{text}</answer>"]
    if "answer" in tools:
        call = {"name": "answer", "arguments": {"answer": text}}
        actions.append(f"<tool_call>{json.dumps(call)}</tool_call>")
    return actions


@pytest.mark.slow
@pytest.mark.parametrize("env_id", SINGLE_AGENT)
def test_fuzz_answers_never_raise_in_any_env(env_id: str) -> None:
    env = gym.make(env_id)
    try:
        _, info = env.reset(seed=0)
        tools = [t.get("function", t).get("name") for t in info.get("tools", [])]
        state = {"episodes": 0}

        @settings(
            max_examples=4 if env_id in BROWSER else 12,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(text=junk)
        def step_junk(text: str) -> None:
            for action in _answer_actions(text, tools):
                obs, reward, terminated, truncated, _ = env.step(action)
                assert isinstance(obs["text"], str)
                assert isinstance(float(reward), float)
                if terminated or truncated:
                    state["episodes"] += 1
                    env.reset(seed=state["episodes"])

        step_junk()
    finally:
        env.close()
