"""Processes appending to one file with ``Record(..., mode="a")`` keep every frame in its own
episode, however the processes came to be (issue 23).

Two writer processes record 30 three-step episodes each. Each round checks that the file
reads back as exactly 60 episodes and 180 steps with no problem, and that every step frame
sits in the episode that wrote it (each action names its writer, episode and step). The
rounds cover wrappers built in each child, and a wrapper built in the parent and inherited
through ``fork``: that one used to give both children the same episode ids (so their frames
were merged into each other's episodes) and the same open file (so ``flock`` did not keep
them apart).
"""

from __future__ import annotations

import multiprocessing as mp
import os
from pathlib import Path

import gymnasium as gym
import pytest
from agentgym.wrappers import Record

import agentgym  # noqa: F401
import agentgym.trajectory as trj

ENV_ID = "agentgym/Sokoban-Tiny-v0"
EPISODES = 30
STEPS = 3
ROUNDS = 3
FORK = mp.get_context("fork")


def _action(tag: int, episode: int, step: int) -> str:
    # plain text, no tool call: the env answers "invalid action" and never ends the episode
    return f"writer {tag} episode {episode} step {step}"


def _play(env: Record, tag: int) -> None:
    for episode in range(EPISODES):
        env.reset(seed=1000 * tag + episode)
        for step in range(1, STEPS + 1):
            env.step(_action(tag, episode, step))


def _own_wrapper(path: str, barrier, tag: int) -> None:  # runs in a child process
    env = Record(gym.make(ENV_ID), path, mode="a")
    barrier.wait(30)
    _play(env, tag)
    env.close()


def _inherited_wrapper(env: Record, barrier, tag: int) -> None:  # runs in a child process
    barrier.wait(30)
    _play(env, tag)
    env.close()


def _check(path: Path, tags: tuple[int, ...] = (1, 2), extra_episodes: int = 0) -> None:
    with trj.open(path) as reader:
        episodes = list(reader.episodes())
        assert reader.problems == []
    assert len(episodes) == len(tags) * EPISODES + extra_episodes
    assert len({ep.episode_id for ep in episodes}) == len(episodes)
    assert sum(ep.length for ep in episodes) == (len(tags) * EPISODES + extra_episodes) * STEPS
    by_seed = {ep.seed: ep for ep in episodes}
    for tag in tags:
        for episode in range(EPISODES):
            ep = by_seed[1000 * tag + episode]
            assert ep.complete and ep.end is not None and ep.end["length"] == STEPS
            assert [s["action"] for s in ep.steps] == [
                _action(tag, episode, step) for step in range(1, STEPS + 1)
            ]
            assert [s["step"] for s in ep.steps] == [1, 2, 3]


def _run(target, args_of) -> None:
    barrier = FORK.Barrier(2)
    procs = [FORK.Process(target=target, args=(*args_of(tag), barrier, tag)) for tag in (1, 2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_each_process_with_its_own_wrapper(tmp_path: Path, round_: int):
    path = tmp_path / f"own{round_}.agtr"
    _run(_own_wrapper, lambda tag: (str(path),))
    _check(path)


@pytest.mark.parametrize("mode", ["a", "w"])
@pytest.mark.parametrize("round_", range(ROUNDS))
def test_wrapper_built_in_the_parent_and_inherited_by_fork(tmp_path: Path, mode: str, round_: int):
    path = tmp_path / f"inherited{round_}.agtr"
    env = Record(gym.make(ENV_ID), path, mode=mode)
    _run(_inherited_wrapper, lambda tag: (env,))
    env.close()  # the parent's recorder: it recorded nothing itself
    _check(path)


def test_episode_in_progress_and_buffered_at_the_fork_stays_the_parents(tmp_path: Path):
    path = tmp_path / "buffered.agtr"
    env = Record(gym.make(ENV_ID), path, mode="a", buffer_bytes=1 << 20)
    env.reset(seed=5)  # its episode_start is still in the buffer at the fork
    env.step(_action(0, 5, 1))
    _run(_inherited_wrapper, lambda tag: (env,))
    for step in (2, 3):
        env.step(_action(0, 5, step))
    env.close()
    _check(path, extra_episodes=1)
    with trj.open(path) as reader:
        (parent,) = [ep for ep in reader.episodes() if ep.seed == 5]
    assert [s["action"] for s in parent.steps] == [_action(0, 5, s) for s in (1, 2, 3)]
    assert parent.end is not None and parent.end["termination"] == "aborted"


def test_episode_ids_name_the_writing_process(tmp_path: Path):
    path = tmp_path / "ids.agtr"
    env = Record(gym.make(ENV_ID), path)
    env.reset(seed=0)
    env.close()
    (ep,) = trj.open(path).episodes()
    token, pid, count = ep.episode_id.split("-")
    assert len(token) == 8 and int(pid, 16) == os.getpid() and count == "000001"
