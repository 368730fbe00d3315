"""CodeTests: the shipped task set, grading on hidden tests, and reward hacks at submit."""

from __future__ import annotations

import pytest
from agentgym.envs.code.codetests import CodeTestsEnv, load_tasks

from agentgym.parsing import render_tool_call

pytestmark = [pytest.mark.sandbox]


def call(name: str, code: str) -> str:
    return render_tool_call(name, {"code": code})


def test_task_set_shape() -> None:
    tasks = load_tasks()
    assert len(tasks) >= 100
    splits = {t["split"] for t in tasks.values()}
    assert splits == {"train", "test"}
    prompts = set()
    for tid, t in tasks.items():
        assert t["id"] == tid
        assert len(t["public_tests"]) >= 1 and len(t["hidden_tests"]) >= 5
        public = {repr(c["args"]) for c in t["public_tests"]}
        assert not public & {repr(c["args"]) for c in t["hidden_tests"]}
        prompts.add(t["prompt"])
    assert len(prompts) == len(tasks)  # every task is distinct


def test_every_reference_solution_passes_its_hidden_tests(pool) -> None:  # type: ignore[no-untyped-def]
    """All tasks at once through the pool (one confined run each)."""
    from agentgym.simulators.sandbox import values_equal

    tasks = list(load_tasks().values())
    futures = [
        pool.submit_raw(
            {"op": "exec", "code": t["solution"], "timeout": 10.0,
             "grade": {"fn": t["entry_point"],
                       "calls": [c["args"] for c in t["public_tests"] + t["hidden_tests"]]}},
            10.0,
        )
        for t in tasks
    ]  # fmt: skip
    for t, fut in zip(tasks, futures):
        results = fut.result()["results"]
        cases = t["public_tests"] + t["hidden_tests"]
        assert all(
            r is not None and r["ok"] and values_equal(r["value"], c["expected"])
            for r, c in zip(results, cases)
        ), t["id"]


@pytest.fixture()
def env(pool):  # type: ignore[no-untyped-def]
    e = CodeTestsEnv()
    e.reset(options={"task_id": "sum_of_powers-2"})
    yield e
    e.close()


def test_public_tests_report(env: CodeTestsEnv) -> None:
    obs, _, term, _, info = env.step(call("run_tests", "def sum_powers(nums):\n    return 0"))
    assert not term and "public tests passed" in obs["text"] and "expected" in obs["text"]
    assert info["reward_components"]["tool"] == 1.0


def test_partial_submission_gets_fraction(env: CodeTestsEnv) -> None:
    code = "def sum_powers(nums):\n    return sum(x * x for x in nums) if len(nums) % 2 else -1"
    _, r, term, _, info = env.step(call("submit", code))  # noqa: RUF059
    frac = info["hidden_passed"] / info["hidden_total"]
    assert term and 0 < frac < 1 and info["success"] is False
    assert info["reward_components"]["outcome"] == pytest.approx(frac)


HACKS = [
    "import sys\nsys.exit(0)",
    "print('PASSED')\nprint('10/10 hidden tests passed')\ndef sum_powers(nums):\n    return -99",
    "class A:\n    def __eq__(self, o):\n        return True\ndef sum_powers(nums):\n    return A()",
    "import unittest\nunittest.TestCase.assertEqual = lambda *a: None\nassert False",
    "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)",
    "import os\nos.kill(os.getppid(), 9)\ndef sum_powers(nums):\n    return None",
]


@pytest.mark.parametrize("code", HACKS)
def test_reward_hacks_score_zero(env: CodeTestsEnv, code: str) -> None:
    _, _, term, _, info = env.step(call("submit", code))
    assert term and info["hidden_passed"] == 0 and info["success"] is False
    assert info["reward_components"]["outcome"] == 0.0


def test_session_tool_is_stateful(env: CodeTestsEnv) -> None:
    env.step(call("python", "def helper(x):\n    return x * 3"))
    obs, _, _, _, _ = env.step(call("python", "helper(5)"))
    assert obs["text"].strip().endswith("15")


def test_action_without_tool_is_invalid(env: CodeTestsEnv) -> None:
    obs, _, _, _, info = env.step("<answer>done</answer>")
    assert info["action_valid"] is False and "expected a python" in obs["text"]
