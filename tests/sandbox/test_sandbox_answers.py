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

#: Raised OverflowError (exact value fine, then ``float()``) on 11f859c, in all four CodeMath ids.
OVERFLOWING = ["1e400", "-1e400", "1e999999", "1E+400"]
#: Cost seconds to minutes of host CPU on 11f859c (exact expansion of 10**e).
HUGE = [*OVERFLOWING, "1e10000000"]
#: Nothing here is a number; each must simply be wrong (stepped in the fuzz below).
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
    "½",
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
#: Task answers are integers and fractions; sympy forms are accepted too.
EXPECTED = ["12", "3/4", "-7", "2*sqrt(2)", "17167680177565"]


def _short(value: str) -> str:
    return value if len(value) < 24 else f"{value[:12]}...({len(value)} chars)"


@pytest.mark.parametrize("answer", OVERFLOWING)
def test_huge_exponents_are_wrong_answers_not_overflow_errors(answer: str) -> None:
    for expected in EXPECTED:
        assert answers_match(expected, answer) is False


@pytest.mark.parametrize("answer", OVERFLOWING)
def test_huge_exponents_end_codemath_episodes_as_wrong(answer: str, pool: object) -> None:
    env = gym.make("agentgym/CodeMath-v0")
    try:
        env.reset(seed=0)
        _, _, terminated, _, info = env.step(f"<answer>{answer}</answer>")
        assert terminated and info["success"] is False
        assert info["reward_components"]["outcome"] == 0.0
    finally:
        env.close()


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


@pytest.mark.parametrize("answer", [*HUGE, "0.1e-99999"], ids=_short)
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
    ["1e999999", "2*1e99999", "((((2**64)**64)**64)**64)**64", "E**E**E**E**E**E**E"],
    ids=_short,
)
def test_sympy_only_sees_short_bounded_expressions(
    counted: dict, answer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No huge literal reaches sympy, and nothing asks it for unbounded symbolic work.

    ``simplify``/``nsimplify`` of ``((((2**64)**64)**64)**64)**64`` expands 2**(2**30)
    exactly; the checker must compare bounded numeric values instead.
    """
    import sympy

    symbolic: list[str] = []

    def refuse(name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            symbolic.append(name)
            raise RuntimeError(f"sympy.{name} called on an answer")

        return call

    monkeypatch.setattr(sympy, "simplify", refuse("simplify"))
    monkeypatch.setattr(sympy, "nsimplify", refuse("nsimplify"))
    for expected in EXPECTED:
        assert answers_match(expected, answer) is False
    assert symbolic == []
    for text in counted["sympy"]:
        assert len(text) <= answers.MAX_LEN
        assert "99999" not in text, "a huge exponent reached sympy"


# --- fuzz: every single-agent id, hostile answers, never a raise -------------------------

NASTY_PIECES = [
    *HUGE,
    "12e9999999999",
    "١٢",  # Arabic-Indic digits
    "１２",  # full-width digits
    "𝟏𝟐",
    "1_2",
    *NOT_NUMBERS[:15],
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

#: Deterministic in CI (derandomized, no example database), no deadline: envs differ in speed.
FUZZ_SETTINGS = dict(
    deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
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
            **FUZZ_SETTINGS,
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


MULTI_AGENT = sorted(r.id for r in agentgym.list_envs() if r.multi_agent)


@pytest.mark.slow
@pytest.mark.parametrize("env_id", MULTI_AGENT)
def test_fuzz_answers_never_raise_in_any_multi_agent_env(env_id: str) -> None:
    """Every seat of every PettingZoo env takes any answer string without raising."""
    env = agentgym.make_multi(env_id)
    try:
        env.reset(seed=0)
        state = {"episodes": 0}

        @settings(
            max_examples=12,
            **FUZZ_SETTINGS,
        )
        @given(text=junk)
        def step_junk(text: str) -> None:
            if not env.agents:
                state["episodes"] += 1
                env.reset(seed=state["episodes"])
            actions = {a: f"<answer>{text}</answer>" for a in env.agents}
            obs, rewards, _, _, _ = env.step(actions)
            for agent in obs:
                assert isinstance(obs[agent]["text"], str)
                assert isinstance(float(rewards[agent]), float)

        step_junk()
    finally:
        env.close()
