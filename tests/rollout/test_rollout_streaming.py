"""A run that streams its groups keeps none of them; an attempt sums its reward components.

``collect(..., keep=False)`` hands each released group to ``on_group`` and lets it go: the
summary counts it as a kept one would be counted, and memory does not grow with the run.
``play`` (``agentgym run``, ``demo``, ``demos``) runs that way, and builds its summaries
from the engine's own ``on_end`` summary, whose ``components`` are the attempt's sums.
"""

from __future__ import annotations

import gc
import time
import weakref
from typing import Any

import gymnasium as gym
import pytest

import agentgym  # noqa: F401  (registers the envs)
from agentgym.agents import RandomPolicy
from agentgym.episodes import play
from agentgym.rollout import EpisodeCallbacks, LocalEnvSource, RolloutConfig, RolloutEngine
from agentgym.rollout.events import EpisodeSummary, StepEvent
from agentgym.rollout.records import Episode, Group
from tests.fake_llm_server import ScriptedChatPolicy

SOKOBAN = "agentgym/Sokoban-Tiny-v0"
COUNTS = ("groups", "usable_groups", "excluded_groups", "episodes_finished", "tokens")


def _collect(keep: bool, lockstep: bool) -> tuple[Any, list[weakref.ref[Group]], list[int]]:
    """Six groups of two over Sokoban; weak references to the groups ``on_group`` saw."""
    seen: list[weakref.ref[Group]] = []
    sizes: list[int] = []

    def on_group(group: Group) -> None:
        seen.append(weakref.ref(group))
        sizes.append(len(group.members))

    config = RolloutConfig(group_size=2, max_in_flight=4, partial=False, lockstep=lockstep)
    engine = RolloutEngine(LocalEnvSource(SOKOBAN), ScriptedChatPolicy(), range(6), config)
    started = time.perf_counter()
    collection = engine.run_to_end(6, on_group=on_group, keep=keep)
    assert 0 < collection.summary.seconds <= time.perf_counter() - started
    return collection, seen, sizes


@pytest.mark.parametrize("lockstep", [False, True])
def test_a_call_that_does_not_keep_its_groups_counts_them_and_lets_them_go(lockstep: bool) -> None:
    kept, kept_seen, kept_sizes = _collect(True, lockstep)
    streamed, streamed_seen, streamed_sizes = _collect(False, lockstep)
    assert len(kept.groups) == 6 and streamed.groups == []
    assert streamed_sizes == kept_sizes == [2] * 6
    for name in COUNTS:
        assert getattr(streamed.summary, name) == getattr(kept.summary, name), name
    assert streamed.summary.groups == 6 and streamed.summary.tokens > 0
    gc.collect()
    assert all(ref() is not None for ref in kept_seen)  # the collection holds them
    assert [ref() for ref in streamed_seen] == [None] * 6  # nothing does


def test_play_holds_no_finished_episode_while_it_runs() -> None:
    live: list[int] = []
    first = 7_000_000  # seeds of this run only: episodes other tests left behind do not count

    def on_end(slot: int, summary: EpisodeSummary) -> None:
        gc.collect()
        live.append(sum(isinstance(o, Episode) and o.seed >= first for o in gc.get_objects()))

    summaries = play(
        SOKOBAN,
        RandomPolicy(0),
        episodes=30,
        seed=first,
        num_envs=3,
        progress=False,
        on_end=on_end,
    )
    assert len(summaries) == 30 and len(live) == 30
    # the attempts on the 3 envs, the one ending among them, and one starting: never the
    # 30 a kept run holds (5 and 6 were seen, under load, while an idle lockstep env thread
    # held the last turn it ran, and with it that turn's finished attempts)
    assert max(live) <= 3 + 1


def test_an_attempts_reward_components_are_the_sums_of_its_steps() -> None:
    sums: dict[int, dict[str, float]] = {}
    ended: dict[int, EpisodeSummary] = {}

    def on_step(event: StepEvent) -> None:
        into = sums.setdefault(event.slot, {})
        for name, value in event.info["reward_components"].items():
            into[name] = into.get(name, 0.0) + float(value)

    callbacks = EpisodeCallbacks(
        on_step=on_step, on_end=lambda slot, summary: ended.setdefault(slot, summary)
    )
    config = RolloutConfig(group_size=2, max_in_flight=4, partial=False)
    engine = RolloutEngine(LocalEnvSource(SOKOBAN), RandomPolicy(3), range(4), config, callbacks)
    collection = engine.run_to_end(4)
    episodes = {ep.traj_id: ep for ep in collection.episodes}
    assert sorted(ended) == sorted(sums) == sorted(episodes)
    for slot, summary in ended.items():
        assert summary.components == sums[slot] == episodes[slot].components
        # Sokoban charges its step component -1 on every step
        assert summary.components["step"] == -summary.turns == -len(episodes[slot].steps)


def test_play_summaries_are_the_engines_counts() -> None:
    events: dict[int, list[StepEvent]] = {}
    summaries = play(
        SOKOBAN,
        RandomPolicy(1),
        episodes=6,
        num_envs=2,
        progress=False,
        on_step=lambda e: events.setdefault(e.episode, []).append(e),
    )
    for s in summaries:
        steps = events[s.episode]
        assert s.turns == len(steps) > 0
        assert s.total_reward == sum(e.reward for e in steps)
        assert s.invalid_actions == sum(not e.info.get("action_valid", True) for e in steps)
        assert s.components["step"] == -len(steps)
        assert (s.terminated, s.truncated) == (steps[-1].terminated, steps[-1].truncated)
        assert s.env_id == SOKOBAN and s.seed == s.episode


class Unsaid(gym.Wrapper):
    """An env whose steps do not say whether the action was valid."""

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(action)
        info = {k: v for k, v in info.items() if k != "action_valid"}
        return obs, reward, terminated, truncated, info


def test_a_step_whose_env_does_not_say_counts_as_valid() -> None:
    source = LocalEnvSource(SOKOBAN, factory=lambda: Unsaid(gym.make(SOKOBAN)))
    config = RolloutConfig(group_size=1, max_in_flight=2, partial=False)
    collection = RolloutEngine(source, RandomPolicy(0), range(2), config).run_to_end(2)
    steps = [s for ep in collection.episodes for s in ep.steps]
    assert steps and all(s.valid for s in steps)
