"""Reading episodes back through filters (task, success, return), with and without the sidecar
index, and frames that carry no episode id: each query returns exactly the episodes it names.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from agentgym.wrappers import Record

from agentgym.trajectory import TrajectoryReader
from agentgym.trajectory.index import build_index
from agentgym.trajectory.writer import TrajectoryWriter
from tests.fake_envs import CounterEnv


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> tuple[Path, list[tuple[str, bool]]]:
    """Four episodes: two tasks; seeds 0 and 2 solved by the oracle, the others truncated."""
    path = tmp_path_factory.mktemp("filters") / "t.agtr"
    env = Record(CounterEnv(max_turns=6), path)
    made = []
    for seed, task in ((0, "counter-1"), (1, "counter-1"), (2, "counter-2"), (3, "counter-2")):
        env.reset(seed=seed, options={"task_id": task})
        done = False
        while not done:
            action = env.unwrapped.oracle_action() if seed in (0, 2) else "x"
            _, _, terminated, truncated, _ = env.step(action)
            done = terminated or truncated
        made.append((task, seed in (0, 2)))
    env.close()
    return path, made


def _seeds(path: Path, **filters) -> list[int]:
    with TrajectoryReader(path) as reader:
        return [ep.seed for ep in reader.episodes(**filters)]


@pytest.mark.parametrize("use_index", [False, True])
def test_filters_select_exactly_the_matching_episodes(recording, use_index):
    path, _ = recording
    if use_index:
        build_index(path)
    assert _seeds(path, use_index=use_index) == [0, 1, 2, 3]
    assert _seeds(path, task_id="counter-2", use_index=use_index) == [2, 3]
    assert _seeds(path, task_id="counter-9", use_index=use_index) == []
    assert _seeds(path, success=True, use_index=use_index) == [0, 2]
    assert _seeds(path, success=False, use_index=use_index) == [1, 3]
    assert _seeds(path, task_id="counter-1", success=True, use_index=use_index) == [0]
    with TrajectoryReader(path) as reader:
        returns = {ep.seed: ep.return_ for ep in reader.episodes()}
    best = max(returns.values())
    assert _seeds(path, min_return=best, use_index=use_index) == [
        s for s, r in returns.items() if r >= best
    ]
    assert _seeds(path, max_return=best - 1e-9, use_index=use_index) == [
        s for s, r in returns.items() if r < best
    ]


def test_frames_without_a_string_episode_id_are_dropped_and_reported(tmp_path: Path):
    path = tmp_path / "odd.agtr"
    with TrajectoryWriter(path) as writer:
        writer.write({"type": "step", "reward": 1.0})  # no episode_id
        writer.write({"type": "step", "episode_id": 7, "reward": 1.0})  # not a string
        writer.write({"type": "episode_start", "episode_id": "e1", "task_id": "t"})
        writer.write({"type": "episode_end", "episode_id": "e1", "return": 0.0})
    with TrajectoryReader(path) as reader:
        eps = list(reader.episodes())
        assert [e.episode_id for e in eps] == ["e1"]
        assert [p.kind for p in reader.problems] == ["invalid_frame", "invalid_frame"]
        assert "step.episode_id: expected a string" in reader.problems[0].detail
