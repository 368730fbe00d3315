"""Several processes appending to one ``.agtr`` file lose nothing (issue 15, T1).

Each writer process records real Sokoban episodes with its own :class:`Recorder` in
``mode="a"``. All writers open the file before any of them writes (a barrier), which is the
case where unlocked appends overwrite each other.
"""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import gymnasium as gym

import agentgym  # noqa: F401
import agentgym.trajectory as trj
from agentgym.trajectory import Recorder

ENV_ID = "agentgym/Sokoban-Tiny-v0"
EPISODES = 30
STEPS = 3


def _writer(path: str, barrier, tag: int) -> None:  # runs in a child process
    env = gym.make(ENV_ID)
    rec = Recorder(path, mode="a", env_id=ENV_ID, header_extra={"writer": tag})
    barrier.wait(30)
    for episode in range(EPISODES):
        seed = 1000 * tag + episode
        obs, info = env.reset(seed=seed)
        eid = rec.start_episode(env_id=ENV_ID, obs=obs, info=info, seed=seed)
        for _ in range(STEPS):
            action = env.unwrapped.oracle_action()
            obs, reward, _term, _trunc, info = env.step(action)
            rec.record_step(
                eid,
                action=action,
                obs=obs,
                reward=reward,
                terminated=False,
                truncated=False,
                info=info,
            )
        rec.end_episode(eid, aborted=True)
    rec.close()
    env.close()


def test_two_processes_appending_to_one_file_lose_no_episode_or_step(tmp_path: Path):
    path = tmp_path / "shared.agtr"
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_writer, args=(str(path), barrier, tag)) for tag in (1, 2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]

    with trj.open(path) as reader:
        episodes = list(reader.episodes())
        assert reader.problems == []
    assert len(episodes) == 2 * EPISODES
    assert all(ep.complete and ep.length == STEPS for ep in episodes)
    assert sum(ep.length for ep in episodes) == 2 * EPISODES * STEPS
    seeds = sorted(ep.seed for ep in episodes)
    assert seeds == sorted(1000 * t + e for t in (1, 2) for e in range(EPISODES))
    # the steps of each episode are its own, in order
    assert all([s["step"] for s in ep.steps] == [1, 2, 3] for ep in episodes)
