"""Which held-out episodes are played, and with which settings (issue 38, mutation target).

The one held-out evaluator, :func:`agentgym.rollout.heldout.heldout_eval` (``agentgym eval``
runs it asynchronously, the trainer and the learning protocol in lockstep), must play
exactly the tasks its arguments name: episode ``k`` of ``episodes`` tasks x ``samples_per_task`` is reset
with seed ``seed + k // samples_per_task`` on the test split, and
:func:`~agentgym.algos.heldout.distinct_task_seeds` picks the first seeds whose tasks are new.
"""

from __future__ import annotations

import asyncio
import inspect
import io
import sys
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import pytest

import agentgym  # noqa: F401  (registers the envs)
from agentgym.agents.base import Generation, PolicyInput
from agentgym.agents.http import PolicyRequestError
from agentgym.agents.scripted import OraclePolicy
from agentgym.algos.heldout import distinct_task_seeds, heldout_eval, seed_task_mapper
from agentgym.error import InvalidConfigError
from agentgym.rollout import CollectionError
from agentgym.rollout.heldout import stop_when_policy_is_down
from agentgym.rollout.records import Episode

SOKOBAN = "agentgym/Sokoban-Tiny-v0"


def tasks_of(seeds: Sequence[int]) -> list[str]:
    env = gym.make(SOKOBAN, split="test")
    try:
        return [env.reset(seed=s)[1]["task_id"] for s in seeds]
    finally:
        env.close()


class Watching:
    """The oracle, recording the temperature and the chat length of every request."""

    def __init__(self) -> None:
        self.inner, self.temperature = OraclePolicy(), 0.7
        self.seen: list[tuple[float, int]] = []

    def act(self, items: Sequence[PolicyInput]) -> list[Generation]:
        self.seen += [(self.temperature, len(i.messages)) for i in items]
        return self.inner.act(items)


def _played(asynchronous: bool = True, **kwargs: Any) -> list[Episode]:
    episodes: list[Episode] = []
    heldout_eval(SOKOBAN, on_episode=episodes.append, asynchronous=asynchronous, **kwargs)
    return sorted(episodes, key=lambda ep: ep.index)


@pytest.mark.parametrize("asynchronous", [True, False])
def test_heldout_plays_seed_plus_task_index_on_the_test_split(asynchronous: bool) -> None:
    played = _played(
        asynchronous,
        policy=OraclePolicy(),
        episodes=3,
        samples_per_task=2,
        seed=5,
        num_envs=4,
    )
    assert [(ep.index, ep.seed) for ep in played] == [(k, 5 + k // 2) for k in range(6)]
    assert [ep.task_id for ep in played] == tasks_of([5, 5, 6, 6, 7, 7])
    assert all(ep.status == "done" and ep.success for ep in played)


def test_heldout_defaults_one_sample_sampled_one_past_turn() -> None:
    policy = Watching()
    played = _played(policy=policy, episodes=3, env_kwargs={"max_turns": 4})
    assert [ep.seed for ep in played] == [0, 1, 2]  # one sample per task, from seed 0
    assert {t for t, _ in policy.seen} == {0.7}  # not greedy: the temperature is left alone
    assert max(n for _, n in policy.seen) <= 4  # system, first observation, one past turn


def test_heldout_greedy_sets_temperature_zero_for_the_run_only() -> None:
    policy = Watching()
    _played(policy=policy, episodes=2, greedy=True)
    assert {t for t, _ in policy.seen} == {0.0} and policy.temperature == 0.7


def test_heldout_keeps_at_most_num_envs_in_flight_by_default() -> None:
    """First requests wait until ``num_envs`` (its default) have come, and a little longer,
    so that one more episode in flight would be seen waiting too."""
    default = inspect.signature(heldout_eval).parameters["num_envs"].default

    class Barrier:
        def __init__(self) -> None:
            self.inner, self.waiting, self.most = OraclePolicy(), 0, 0
            self.full = asyncio.Event()

        async def act(self, item: PolicyInput) -> Generation:
            if len(item.messages) <= 2 and not self.full.is_set():
                self.waiting += 1
                self.most = max(self.most, self.waiting)
                if self.waiting == default:
                    await asyncio.sleep(0.2)  # room for a 17th to show up (none may)
                    self.full.set()
                await self.full.wait()
            return self.inner.act([item])[0]

    policy = Barrier()
    played = _played(policy=policy, episodes=default + 4)  # type: ignore[arg-type]
    assert len(played) == default + 4 and policy.most == default


def test_heldout_retries_a_failing_episode_once_then_stops() -> None:
    class Down:
        calls = 0

        async def act(self, item: PolicyInput) -> Generation:
            Down.calls += 1
            raise PolicyRequestError("HTTP 503 from the model server", status=503)

    with pytest.raises(CollectionError, match="HTTP 503") as raised:
        heldout_eval(SOKOBAN, Down(), episodes=1, asynchronous=True)  # type: ignore[arg-type]
    assert Down.calls == 2 and isinstance(raised.value.__cause__, PolicyRequestError)


@pytest.mark.parametrize(("episodes", "samples"), [(0, 1), (1, 0), (-1, 2)])
def test_heldout_needs_an_episode_and_a_sample(episodes: int, samples: int) -> None:
    with pytest.raises(InvalidConfigError, match="episodes and samples_per_task"):
        heldout_eval(SOKOBAN, OraclePolicy(), episodes=episodes, samples_per_task=samples)


def test_heldout_of_one_episode_plays_it() -> None:
    assert [ep.seed for ep in _played(policy=OraclePolicy(), episodes=1, seed=9)] == [9]


def _attempt(status: str, attempt: int, cause: str | None, error: Any = None) -> Episode:
    ep = Episode("g", 0, 0, 0, attempt, status=status)  # type: ignore[arg-type]
    ep.cause, ep.error = cause, error
    return ep


def test_the_policy_counts_as_down_only_after_the_last_attempt_failed_on_it() -> None:
    check = stop_when_policy_is_down(1)
    boom = PolicyRequestError("HTTP 500", status=500)
    check(_attempt("infra_failure", 0, "policy_error: HTTP 500", boom))  # a retry follows
    check(_attempt("infra_failure", 1, "env_error: crashed"))  # the env, not the server
    check(_attempt("done", 1, None))
    with pytest.raises(PolicyRequestError):
        check(_attempt("infra_failure", 1, "policy_error: HTTP 500", boom))
    with pytest.raises(RuntimeError, match="policy_error: gone"):
        check(_attempt("infra_failure", 2, "policy_error: gone"))
    check(_attempt("infra_failure", 1, None))  # no cause: not a policy error


def test_heldout_eval_plays_seed_plus_k_or_the_seeds_given(capsys: Any) -> None:
    result = heldout_eval(SOKOBAN, OraclePolicy(), episodes=3, seed=10, num_envs=2)
    assert [o.seed for o in result.outcomes] == [10, 11, 12]
    assert [o.task_id for o in result.outcomes] == tasks_of([10, 11, 12])
    given = heldout_eval(SOKOBAN, OraclePolicy(), seeds=[7, 3], num_envs=2)
    assert [o.seed for o in given.outcomes] == [3, 7]
    one = heldout_eval(SOKOBAN, OraclePolicy(), episodes=1, samples_per_task=2)
    assert [o.seed for o in one.outcomes] == [0, 0] and one.success == 1.0
    assert capsys.readouterr().err == ""  # no progress bar unless asked for


def test_heldout_eval_passes_env_kwargs_and_defaults_to_one_past_turn() -> None:
    policy = Watching()
    result = heldout_eval(SOKOBAN, policy, episodes=2, env_kwargs={"max_turns": 1})
    assert all(o.turns == 1 for o in result.outcomes)
    assert {t for t, _ in policy.seen} == {0.7}
    longer = Watching()
    heldout_eval(SOKOBAN, longer, episodes=2, env_kwargs={"max_turns": 4})
    assert max(n for _, n in longer.seen) <= 4


def test_heldout_eval_shows_no_progress_bar_unless_asked_even_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stderr", Terminal())
    heldout_eval(SOKOBAN, OraclePolicy(), episodes=2)
    assert sys.stderr.getvalue() == ""
    heldout_eval(SOKOBAN, OraclePolicy(), episodes=2, progress=True)
    assert "eval test sampled" in sys.stderr.getvalue()


@pytest.mark.parametrize(("episodes", "samples"), [(0, 1), (2, 0)])
def test_heldout_eval_needs_an_episode_and_a_sample(episodes: int, samples: int) -> None:
    with pytest.raises(InvalidConfigError, match=">= 1"):
        heldout_eval(SOKOBAN, OraclePolicy(), episodes=episodes, samples_per_task=samples)


def test_distinct_task_seeds_start_skip_exclude_and_run_out() -> None:
    tasks = ["a", "b", "a", "c", "d", "b", "e"]
    task_of = tasks.__getitem__
    assert distinct_task_seeds(task_of, 3) == [0, 1, 3]
    assert distinct_task_seeds(task_of, 2, start=2) == [2, 3]
    assert distinct_task_seeds(task_of, 2, exclude=["a", "c"]) == [1, 4]
    assert distinct_task_seeds(task_of, 0) == []
    assert distinct_task_seeds(task_of, 5, max_tries=7) == [0, 1, 3, 4, 6]
    with pytest.raises(InvalidConfigError, match="found only 4 distinct tasks in 5 seeds"):
        distinct_task_seeds(task_of, 5, max_tries=5)


def test_distinct_task_seeds_looks_at_a_hundred_thousand_seeds_by_default() -> None:
    with pytest.raises(InvalidConfigError, match="found only 1 distinct tasks in 100000 seeds"):
        distinct_task_seeds(lambda seed: "same", 2)


def test_seed_task_mapper_names_the_task_a_reset_gives_on_the_split_and_kwargs() -> None:
    task_of, close = seed_task_mapper(SOKOBAN, "test")
    try:
        assert [task_of(s) for s in (0, 5, 9)] == tasks_of([0, 5, 9])
    finally:
        close()
    two_boxes, close = seed_task_mapper(SOKOBAN, "test", {"num_boxes": 2})
    try:
        assert "-b2-" in two_boxes(0) and "-b1-" in tasks_of([0])[0]
    finally:
        close()
