"""Episodes played by ``play`` (``agentgym run``, ``demo``, ``demos``) are pinned.

The digests below were taken from the recordings of the loop ``play`` had before it became a
call into the rollout engine (commit 643b316). Each covers every episode's frames (reset,
every step's action, observation, reward, components and info, the end) and the summaries
``play`` returns, in episode order, with what differs from run to run left out (episode ids,
wall-clock times, timings). Policies that draw random numbers are included on purpose: their
draws follow the order in which the policy sees the episodes, so a change in how episodes are
batched turn by turn changes these digests.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentgym.agents import make_policy
from agentgym.agents.scripted import NoisyPolicy, RandomPolicy
from agentgym.algos.demos import observer_for, record_demos
from agentgym.episodes import play
from agentgym.trajectory import Recorder, TrajectoryReader

#: Keys of a frame that change from run to run.
VOLATILE = {"episode_id", "t", "timings"}


def canonical_digest(path: Path, summaries: list[Any]) -> str:
    """sha256 over the recording's episodes (by episode index) and the summaries."""
    episodes = []
    for ep in TrajectoryReader(path).episodes():
        frames = [ep.start, *ep.steps, ep.end]
        episodes.append([{k: v for k, v in f.items() if k not in VOLATILE} for f in frames])
    episodes.sort(key=lambda frames: frames[0]["meta"]["episode_index"])
    rows = [dataclasses.asdict(s) for s in summaries]
    blob = json.dumps([episodes, rows], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def played(env_id: str, policy: Any, *, seed: int, **kwargs: Any) -> Callable[[Path], str]:
    def run(tmp: Path) -> str:
        path = tmp / "run.agtr"
        with Recorder(path) as rec:
            callbacks = rec.play_callbacks(env_id, seed=seed)
            summaries = play(env_id, policy(), seed=seed, progress=False, **kwargs, **callbacks)
        return canonical_digest(path, summaries)

    return run


def demos(env_id: str, *, epsilon: float, seed: int, episodes: int) -> Callable[[Path], str]:
    def run(tmp: Path) -> str:
        path = tmp / "demos.agtr"
        policy = NoisyPolicy(observer_for(env_id), epsilon, seed)
        record_demos(env_id, path, episodes=episodes, policy=policy, seed=seed, num_envs=3)
        return canonical_digest(path, [])

    return run


CASES: dict[str, tuple[Callable[[Path], str], str]] = {
    "sokoban-random": (
        played("agentgym/Sokoban-Tiny-v0", lambda: RandomPolicy(3), seed=5, episodes=7, num_envs=3),
        "1f50c34e4ed952a1",
    ),
    "sokoban-oracle": (
        played("agentgym/Sokoban-Small-v0", lambda: make_policy("oracle"), seed=2, episodes=4),
        "41a4a2f6cb26f90f",
    ),
    "sokoban-random-process": (
        played(
            "agentgym/Sokoban-Tiny-v0",
            lambda: RandomPolicy(4),
            seed=9,
            episodes=3,
            num_envs=2,
            backend="process",
        ),
        "371a5e38e6b042e9",
    ),
    "twenty-random-full-history": (
        played(
            "agentgym/UserTwentyQuestions-v0",
            lambda: RandomPolicy(1),
            seed=0,
            episodes=4,
            num_envs=2,
            history_turns=None,
        ),
        "389cc3ea1f0ef3d1",
    ),
    "webshop-noisy-oracle": (
        played(
            "agentgym/WebShopText-v0",
            lambda: NoisyPolicy(make_policy("oracle"), 0.3, 7),
            seed=11,
            episodes=5,
            num_envs=3,
        ),
        "4f215195d0ecbc9a",
    ),
    "household-observer-demos": (
        demos("agentgym/Household-v0", epsilon=0.3, seed=4, episodes=5),
        "45e500e0d72dfbf9",
    ),
    "search-observer-demos": (
        demos("agentgym/SearchQA-v0", epsilon=0.3, seed=6, episodes=4),
        "1989a352ea9edd39",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_play_recordings_are_the_pinned_ones(name: str, tmp_path: Path) -> None:
    run, digest = CASES[name]
    assert run(tmp_path) == digest
