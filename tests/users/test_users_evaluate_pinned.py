"""``agentgym.evaluation.evaluate`` (pass@k over user seeds) is pinned.

Digests taken at commit 08ce5ca, when ``evaluate`` still stepped its env in a loop of its
own, before it moved onto the rollout engine. Each covers every task's trials: task id,
successes, user seeds, returns and simulator errors, with the report's pass@k / pass^k.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

import agentgym  # noqa: F401  (registers the envs)
from agentgym.agents.base import Generation
from agentgym.agents.scripted import OraclePolicy, RandomPolicy
from agentgym.evaluation import evaluate


class SeedSensitive:
    """Answers right only when the user seed is even: consistency differs from capability."""

    def act(self, inputs: Any) -> list[Generation]:
        env = inputs[0].env
        if env.user_seed % 2:
            return [
                Generation(
                    '<tool_call>{"name": "answer", "arguments": {"answer": "x"}}</tool_call>'
                )
            ]
        return [Generation(env.oracle_action())]


def report_digest(report: Any) -> str:
    tasks = [
        [t.task_id, t.successes, t.user_seeds, [round(r, 6) for r in t.returns], t.sim_errors]
        for t in report.tasks
    ]
    summary = {k: round(v, 6) for k, v in report.summary().items()}
    blob = json.dumps([tasks, summary], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


CASES = {
    "function-oracle": (
        lambda: evaluate("agentgym/UserFunction-v0", OraclePolicy(), tasks=3, n=3, ks=(1, 3)),
        "bf8d0988cf909494",
    ),
    "function-seed-sensitive": (
        lambda: evaluate(
            "agentgym/UserFunction-v0", SeedSensitive(), tasks=4, n=4, ks=(1, 2, 4), seed=7
        ),
        "7087006a786dcdb8",
    ),
    "function-random-bounded": (
        lambda: evaluate(
            "agentgym/UserFunction-v0", RandomPolicy(3), tasks=2, n=3, ks=(1, 3), max_steps=4
        ),
        "90d09545b971ef5a",
    ),
    "sokoban-random": (
        lambda: evaluate(
            "agentgym/Sokoban-Tiny-v0",
            RandomPolicy(5),
            tasks=2,
            n=2,
            ks=(1, 2),
            max_steps=6,
            seed=3,
        ),
        "987d5f8bf6aa39e5",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_evaluate_reports_the_pinned_trials(name: str) -> None:
    run, digest = CASES[name]
    assert report_digest(run()) == digest
