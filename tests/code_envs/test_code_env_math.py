"""CodeMath: problems, answer checking, rewards, tool behaviour and session snapshots."""

from __future__ import annotations

import contextlib
import io

import pytest
from agentgym.envs.code.answers import answers_match
from agentgym.envs.code.codemath import CodeMathEnv
from agentgym.envs.code.math_tasks import TOPICS, make_problem

from agentgym.parsing import render_answer, render_tool_call

pytestmark = [pytest.mark.sandbox]


def py(code: str) -> str:
    return render_tool_call("python", {"code": code})


@pytest.mark.parametrize(
    ("expected", "given", "ok"),
    [
        ("3/4", "0.75", True),
        ("3/4", "6/8", True),
        ("3/4", "\\frac{3}{4}", True),
        ("3/4", "0.7", False),
        ("12", "\\boxed{12}", True),
        ("12", "x = 12", True),
        ("1000", "1,000", True),
        ("2*sqrt(2)", "sqrt(8)", True),
        ("sqrt(2)/2", "0.70710678118", True),
        ("1/3", "0.333", False),
        ("5", "9**9**9**9", False),
        ("5", "__import__('os').system('true')", False),
        ("5", "", False),
        ("-7", "-7", True),
        ("-7", "7", False),
    ],
)
def test_answer_equivalence(expected: str, given: str, ok: bool) -> None:
    assert answers_match(expected, given) is ok


def test_problems_are_deterministic_and_reference_programs_agree() -> None:
    topics = set()
    for seed in range(60):
        for level in (1, 2, 3):
            p = make_problem(seed, level)
            assert p == make_problem(seed, level)
            topics.add(p.topic)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(p.program, {})
            assert answers_match(p.answer, out.getvalue().strip()), p
    assert topics == set(TOPICS)


def test_rewards_and_episode_flow(pool: object) -> None:
    env = CodeMathEnv(levels=(1,))
    try:
        env.reset(seed=5)
        _, r, term, _, info = env.step(py("x = 6 * 7\nprint(x)"))
        assert not term and info["reward_components"]["tool"] == 1.0
        assert r == pytest.approx(0.1)
        obs, _, _, _, info = env.step(py("x + 1"))
        assert obs["text"].strip() == "43"
        obs, _, _, _, info = env.step(py("1/0"))
        assert "ZeroDivisionError" in obs["text"] and info["reward_components"]["tool"] == -1.0
        _, _, _, _, info = env.step("I think so.")
        assert info["action_valid"] is False and info["reward_components"]["format"] == -1.0
        _, r, term, _, info = env.step(render_answer("-123456789"))
        assert term and info["success"] is False and r == 0.0
    finally:
        env.close()


def test_timeout_in_tool_is_an_observation(pool: object) -> None:
    env = CodeMathEnv(levels=(1,), cell_timeout=0.5)
    try:
        env.reset(seed=1)
        env.step(py("keep = 11"))
        obs, _, _, _, info = env.step(py("while True: pass"))
        assert "ran out of time" in obs["text"] and info["reward_components"]["tool"] == -1.0
        obs, _, _, _, _ = env.step(py("keep"))
        assert obs["text"].strip() == "11"
    finally:
        env.close()


def test_snapshot_restore_forks_the_session(pool: object) -> None:
    env = CodeMathEnv(levels=(2,))
    try:
        env.reset(seed=3)
        env.step(py("acc = [1]"))
        snap = env.snapshot()
        key = env.state_key()
        env.step(py("acc.append(2)"))
        assert env.state_key() != key
        for _ in range(2):  # one snapshot restores any number of times
            env.restore(snap)
            assert env.state_key() == key
            obs, _, _, _, _ = env.step(py("acc"))
            assert obs["text"].strip() == "[1]"
    finally:
        env.close()


def test_state_key_is_history_free(pool: object) -> None:
    a, b = CodeMathEnv(levels=(1,)), CodeMathEnv(levels=(1,))
    try:
        a.reset(seed=9)
        b.reset(seed=9)
        a.step(py("v = 1"))
        a.step(py("v = 2"))
        b.step(py("v = 2"))
        assert a.state_key() == b.state_key()
    finally:
        a.close()
        b.close()


def test_splits_are_disjoint() -> None:
    env = CodeMathEnv()
    train, test = env.task_ids("train"), env.task_ids("test")
    assert test[0] not in train and train[0] not in test
    assert train[5] in train and len(test) == 1000
