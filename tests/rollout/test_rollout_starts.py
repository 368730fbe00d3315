"""Where an episode of the engine starts: reset options, and branches from a snapshot.

A branch (an :class:`EpisodeStart` with a snapshot) must continue exactly where the episode
it came from stood: same env state, same chat, so the same policy plays the same steps. It
is not a whole episode, so the recorder's callbacks never see it; a failed branch is
played again from the same snapshot; an env that cannot snapshot fails with a cause that
says so.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import pytest

import agentgym  # noqa: F401  (registers the envs)
from agentgym.agents.base import Generation, PolicyInput
from agentgym.error import InvalidConfigError
from agentgym.pools import EnvPool
from agentgym.rollout import (
    EpisodeCallbacks,
    EpisodeStart,
    LocalEnvSource,
    PoolEnvSource,
    RolloutConfig,
    RolloutEngine,
)
from agentgym.rollout.steps import Chat

MOVES = ["up", "left", "down", "right", "right", "up", "left", "down", "down", "right"]


def move(direction: str) -> str:
    call = json.dumps({"name": "move", "arguments": {"direction": direction}})
    return f"<tool_call>{call}</tool_call>"


class MovesByTurn:
    """Plays ``MOVES[k]`` at the episode's k-th turn, k read from the chat it is shown
    (every past turn: ``history_turns=None``), so a branch that got the right chat plays
    what the original episode played from there."""

    def act(self, inputs: Sequence[PolicyInput]) -> list[Generation]:
        out = []
        for item in inputs:
            k = sum(m["role"] == "assistant" for m in item.messages)
            out.append(Generation(text=move(MOVES[k % len(MOVES)])))
        return out


class Calls:
    def __init__(self) -> None:
        self.resets: list[int] = []
        self.steps: list[int] = []
        self.ends: list[int] = []
        self.episodes: list[Any] = []

    def hooks(self) -> EpisodeCallbacks:
        return EpisodeCallbacks(
            on_reset=lambda slot, k, obs, info: self.resets.append(k),
            on_step=lambda event: self.steps.append(event.episode),
            on_end=lambda slot, summary: self.ends.append(summary.episode),
            on_episode=self.episodes.append,
        )


def run(starts: list[Any], source: Any = None, **config: Any) -> tuple[Any, Calls]:
    calls = Calls()
    settings = {
        "group_size": 1,
        "max_in_flight": 2,
        "partial": False,
        "history_turns": None,
        "lockstep": True,
        **config,
    }
    source = source or LocalEnvSource("agentgym/Sokoban-Tiny-v0", {"max_turns": len(MOVES)})
    engine = RolloutEngine(source, MovesByTurn(), starts, RolloutConfig(**settings), calls.hooks())
    collection = engine.run_to_end(len(starts))
    return collection, calls


def played(ep: Any) -> list[tuple[Any, ...]]:
    return [(s.generation.text, s.state_key, s.reward, s.done, s.success) for s in ep.steps]


def whole_episode(seed: int) -> Any:
    collection, _ = run([seed], keep_branch_points=True)
    (ep,) = collection.groups[0].members
    assert ep.status == "done" and len(ep.steps) >= 4
    return ep


def test_an_episode_keeps_a_branch_point_after_its_start_and_every_step_but_the_last() -> None:
    ep = whole_episode(5)
    assert len(ep.branch_points) == len(ep.steps)
    for k, point in enumerate(ep.branch_points):
        assert len(point.chat.turns) == k
        # the info a branch restores is the one the step row k was taken in
        assert point.info["state_key"] == ep.steps[k].state_key


@pytest.mark.parametrize("k", [0, 2])
def test_a_branch_goes_on_exactly_where_its_episode_stood(k: int) -> None:
    ep = whole_episode(5)
    point = ep.branch_points[k]
    turns_before = list(point.chat.turns)
    start = EpisodeStart(5, snapshot=point.snapshot, chat=point.chat, info=point.info, tag="b")
    collection, calls = run([start])
    (branch,) = collection.groups[0].members
    assert branch.status == "done" and branch.start.tag == "b"
    assert played(branch) == played(ep)[k:]
    assert point.chat.turns == turns_before  # the branch got its own copy of the chat
    # a branch is not a whole episode: only on_episode sees it
    assert (calls.resets, calls.steps, calls.ends) == ([], [], [])
    assert calls.episodes == [branch]


def test_a_branch_on_a_fresh_pool_env_restores_there_too() -> None:
    """A pool env never reset before (a new pool, or one restarted after a crash) is
    reset once by its slot before the restore: its wrappers refuse a step otherwise."""
    ep = whole_episode(6)
    point = ep.branch_points[3]
    start = EpisodeStart(6, snapshot=point.snapshot, chat=point.chat, info=point.info)
    with EnvPool([lambda: gym.make("agentgym/Sokoban-Tiny-v0", max_turns=len(MOVES))]) as pool:
        collection, _ = run([start], source=PoolEnvSource(pool), max_in_flight=1)
    (branch,) = collection.groups[0].members
    assert branch.status == "done", branch.cause
    assert played(branch) == played(ep)[3:]


class FailsOnce(gym.Wrapper):
    """Sokoban-Tiny whose next step raises while ``left[0]`` > 0 (shared by every copy)."""

    def __init__(self, left: list[int]):
        super().__init__(gym.make("agentgym/Sokoban-Tiny-v0", max_turns=len(MOVES)))
        self.left = left

    def step(self, action: str) -> Any:
        if self.left[0]:
            self.left[0] -= 1
            raise RuntimeError("injected crash in the branch's first step")
        return self.env.step(action)


@pytest.mark.parametrize("where", ["local", "pool"])
def test_a_branch_whose_env_fails_is_played_again_from_the_same_snapshot(where: str) -> None:
    """The branch's first step crashes its env; the retry plays the branch again from the
    same snapshot. In a pool, the crashed index gets a fresh env, which has never been
    reset: the retry's slot resets it before the restore (the crashed env's slot had been
    reset, the new one must not inherit that)."""
    ep = whole_episode(8)
    point = ep.branch_points[1]
    left = [1]
    start = EpisodeStart(8, snapshot=point.snapshot, chat=point.chat, info=point.info)
    if where == "pool":
        with EnvPool([lambda: FailsOnce(left)]) as pool:
            source = PoolEnvSource(pool)
            collection, calls = run([start], source=source, max_in_flight=1)
        assert source.restarted == 1
    else:
        collection, calls = run([start], source=LocalEnvSource("", factory=lambda: FailsOnce(left)))
        assert calls.resets == []
    (group,) = collection.groups
    assert [a.status for a in group.attempts] == ["infra_failure", "done"], group.attempts[-1].cause
    assert "injected crash" in (group.attempts[0].cause or "")
    assert played(group.members[0]) == played(ep)[1:]


def test_reset_options_reach_the_env_and_a_plain_seed_sends_none() -> None:
    seen: list[tuple[Any, Any]] = []

    class RecordsReset(gym.Wrapper):
        def reset(self, *, seed: Any = None, options: Any = None) -> Any:
            seen.append((seed, options))
            return self.env.reset(seed=seed)

    source = LocalEnvSource(
        "",
        factory=lambda: RecordsReset(gym.make("agentgym/Sokoban-Tiny-v0", max_turns=2)),
    )
    starts = [EpisodeStart(3, options={"task_id": "t7", "user_seed": 99}), 4]
    collection, calls = run(starts, source=source, max_in_flight=1)
    assert sorted(seen, key=str) == sorted(
        [(3, {"task_id": "t7", "user_seed": 99}), (4, None)], key=str
    )
    assert [g.seed for g in collection.groups] == [3, 4]
    assert calls.resets == [0, 1]  # started from a reset: a whole episode, reported


def test_an_env_that_cannot_snapshot_fails_its_attempts_with_a_cause_that_says_so() -> None:
    class NoSnapshots(gym.Wrapper):
        @property
        def unwrapped(self) -> Any:
            return self  # hides the core's snapshot()

    source = LocalEnvSource(
        "", factory=lambda: NoSnapshots(gym.make("agentgym/Sokoban-Tiny-v0", max_turns=3))
    )
    collection, _ = run([2], source=source, keep_branch_points=True)
    (group,) = collection.groups
    assert not group.usable
    assert all("cannot snapshot" in (a.cause or "") for a in group.attempts)
    assert len(group.attempts) == 2  # the first attempt and its one retry


def test_a_core_that_snapshots_but_cannot_restore_cannot_branch() -> None:
    class HalfSnapshots(gym.Wrapper):
        @property
        def unwrapped(self) -> Any:
            return self

        def snapshot(self) -> Any:  # but no restore()
            return self.env.unwrapped.snapshot()

    source = LocalEnvSource(
        "", factory=lambda: HalfSnapshots(gym.make("agentgym/Sokoban-Tiny-v0", max_turns=3))
    )
    collection, _ = run([2], source=source, keep_branch_points=True)
    assert all("cannot snapshot" in (a.cause or "") for a in collection.groups[0].attempts)


@pytest.mark.parametrize("first", ["restore", "reset"])
@pytest.mark.parametrize("kind", ["local", "pool"])
def test_an_env_is_reset_once_before_its_first_restore_and_never_again(
    kind: str, first: str
) -> None:
    """Before its first restore an env is reset once (no seed: the restore sets its state),
    unless an episode has reset it already; it is never reset again for a restore."""
    ep = whole_episode(5)
    resets: list[Any] = []

    class CountsResets(gym.Wrapper):
        def reset(self, **kwargs: Any) -> Any:
            resets.append((id(self), kwargs.get("seed")))
            return self.env.reset(**kwargs)

    def make() -> gym.Env:
        return CountsResets(gym.make("agentgym/Sokoban-Tiny-v0", max_turns=len(MOVES)))

    starts: list[Any] = [] if first == "restore" else [5]
    starts += [
        EpisodeStart(5, snapshot=p.snapshot, chat=p.chat, info=p.info)
        for p in (ep.branch_points[1], ep.branch_points[2], ep.branch_points[1])
    ]
    if kind == "local":
        collection, _ = run(starts, source=LocalEnvSource("", factory=make), max_in_flight=1)
    else:
        with EnvPool([make]) as pool:
            collection, _ = run(starts, source=PoolEnvSource(pool), max_in_flight=1)
    got = [played(g.members[0]) for g in collection.groups]
    branches = [played(ep)[1:], played(ep)[2:], played(ep)[1:]]
    assert got == branches if first == "restore" else got == [played(ep), *branches]
    envs = [env for env, _ in resets]
    assert len(set(envs)) == len(envs)  # no env is reset twice
    if kind == "pool":  # one env: reset once, by the episode or for the first restore
        assert [seed for _, seed in resets] == ([None] if first == "restore" else [5])
    # (a local source may make a second env when one is lent before the last is back;
    # a fresh env is reset once, with no seed, before its first restore)


def test_a_pool_source_refuses_to_lend_more_envs_than_it_has() -> None:
    with EnvPool([lambda: gym.make("agentgym/Sokoban-Tiny-v0")]) as pool:
        source = PoolEnvSource(pool)
        slot = source.acquire()
        with pytest.raises(InvalidConfigError, match="all 1 live envs of the pool are lent"):
            source.acquire()
        source.release(slot, healthy=True)
        assert source.acquire() is slot  # the same index, lent again


def test_a_failed_env_of_a_pool_that_cannot_restart_is_retired_without_a_try() -> None:
    class NoRestart:  # a pool-like without ``restart``: a failed env cannot be replaced
        num_envs = 2

    source = PoolEnvSource(NoRestart())
    source.release(source.acquire(), healthy=False)
    assert source.retired == [0] and source.capacity == 1 and source.restarted == 0
    assert source.restart_errors == []  # nothing was tried, so nothing failed


def test_reset_options_reach_a_pooled_env_too() -> None:
    seen: list[Any] = []

    class RecordsOptions(gym.Wrapper):
        def reset(self, *, seed: Any = None, options: Any = None) -> Any:
            seen.append(options)
            return self.env.reset(seed=seed)

    def make() -> gym.Env:
        return RecordsOptions(gym.make("agentgym/Sokoban-Tiny-v0", max_turns=2))

    with EnvPool([make]) as pool:
        starts = [EpisodeStart(3, options={"task_id": "t1"}), 4]
        collection, _ = run(starts, source=PoolEnvSource(pool), max_in_flight=1)
    assert seen == [{"task_id": "t1"}, None]
    assert [g.members[0].status for g in collection.groups] == ["done", "done"]


def test_a_start_that_restores_needs_its_chat_and_info_and_no_options() -> None:
    chat = Chat([{"role": "user", "content": "x"}])
    with pytest.raises(InvalidConfigError, match="chat and info"):
        EpisodeStart(1, snapshot=object(), chat=chat)
    with pytest.raises(InvalidConfigError, match="not both"):
        EpisodeStart(1, snapshot=object(), chat=chat, info={}, options={"task_id": "a"})
    assert not EpisodeStart(1, options={"task_id": "a"}).restores


def test_a_start_names_its_group_else_the_prefix_and_seed_do() -> None:
    starts = [EpisodeStart(3, group_id="tree-A"), 4]
    collection, _ = run(starts, group_prefix="it2:", max_in_flight=1)
    assert [g.group_id for g in collection.groups] == ["tree-A", "it2:4"]


@pytest.mark.slow  # starts an agentgym serve process
def test_reset_options_reach_a_served_env_and_a_served_env_refuses_to_branch() -> None:
    from tests.rollout.serve_process import ServeProcess

    with ServeProcess("agentgym/UserFunction-v0", max_sessions=4) as server:
        starts = [
            EpisodeStart(1, options={"task_id": "user-function-2", "user_seed": 5}),
            EpisodeStart(1, options={"task_id": "user-function-0", "user_seed": 5}),
        ]
        collection, _ = run(starts, source=server.source(), max_in_flight=1)
        assert [g.members[0].task_id for g in collection.groups] == [
            "user-function-2",
            "user-function-0",
        ]
        collection, _ = run([1], source=server.source(), max_in_flight=1, keep_branch_points=True)
        (group,) = collection.groups
        assert not group.usable
        assert all("cannot be snapshotted" in (a.cause or "") for a in group.attempts)
        assert server.active_sessions() == 0  # the sources closed their sessions


def test_on_end_counts_the_invalid_actions_of_a_whole_episode() -> None:
    class GarbageFirst(MovesByTurn):
        def act(self, inputs: Sequence[PolicyInput]) -> list[Generation]:
            out = super().act(inputs)
            first = [sum(m["role"] == "assistant" for m in i.messages) == 0 for i in inputs]
            return [Generation("not a tool call") if f else g for f, g in zip(first, out)]

    ends: list[Any] = []
    config = RolloutConfig(group_size=1, max_in_flight=1, partial=False, lockstep=True)
    hooks = EpisodeCallbacks(on_end=lambda slot, summary: ends.append(summary))
    source = LocalEnvSource("agentgym/Sokoban-Tiny-v0", {"max_turns": 4})
    engine = RolloutEngine(source, GarbageFirst(), [5], config, hooks)
    (group,) = engine.run_to_end(1).groups
    (ep,) = group.members
    assert [s.valid for s in ep.steps][:2] == [False, True]
    assert ends[0].invalid_actions == sum(not s.valid for s in ep.steps) == 1
