"""The right final answer of a task, read from the env's own oracle (for answer-path tests)."""

from __future__ import annotations

import re

import gymnasium as gym

import agentgym  # noqa: F401  (registers every id)

#: One id per family whose episodes end with an ``<answer>`` (``answers_in_text``).
ANSWER_FAMILIES = {
    "code": "agentgym/CodeMath-L1-v0",
    "visual": "agentgym/VisualClock-v0",
    "search": "agentgym/SearchQA-v0",
}

_ANSWER = re.compile(r"\s*<answer>(.*)</answer>\s*", re.DOTALL)


def oracle_answer(env_id: str, seed: int, max_turns: int = 20) -> str:
    """Play the oracle on a local env reset with ``seed`` until it answers; its answer.

    The same seed builds the same task everywhere, so this is the right answer for an
    episode reset with ``seed`` behind any adapter (the answer alone earns the outcome).
    """
    env = gym.make(env_id)
    try:
        env.reset(seed=seed)
        for _ in range(max_turns):
            action = env.unwrapped.oracle_action()
            found = _ANSWER.fullmatch(action)
            if found:
                return found.group(1)
            env.step(action)
    finally:
        env.close()
    raise AssertionError(f"{env_id}: the oracle gave no <answer> within {max_turns} turns")
