"""Opt-in batched writes (``buffer_bytes``): same files, and a crash loses only unflushed frames."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest
from agentgym.wrappers import Record

import agentgym  # noqa: F401  (registers envs)
import agentgym.trajectory as trj
from agentgym.trajectory.format import TrajectoryFormatError

# Episode 1 ends (so it is flushed); episode 2 writes three steps that stay in the buffer;
# then the child reports and waits to be killed.
CHILD = r"""
import sys, time
from agentgym.trajectory import Recorder
rec = Recorder(sys.argv[1], buffer_bytes=1 << 20)
ep = rec.start_episode(env_id="agentgym/Sokoban-Tiny-v0", obs={"text": "a"}, info={})
for i in range(4):
    rec.record_step(ep, action="m%d" % i, obs={"text": "o%d" % i}, reward=1.0,
                    terminated=i == 3, truncated=False, info={"i": i})
rec.end_episode(ep)
ep = rec.start_episode(env_id="agentgym/Sokoban-Tiny-v0", obs={"text": "b"}, info={})
for i in range(3):
    rec.record_step(ep, action="n%d" % i, obs={"text": "p%d" % i}, reward=0.5,
                    terminated=False, truncated=False, info={"i": i})
print("ready", flush=True)
time.sleep(60)
"""


def test_a_killed_batching_writer_keeps_every_ended_episode_whole(tmp_path: Path) -> None:
    path = tmp_path / "batched.agtr"
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == b"ready"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    with trj.open(path) as reader:
        episodes = list(reader.episodes())
        assert reader.problems == []  # no torn or damaged frame, only missing ones
    assert len(episodes) == 1  # the unflushed episode is lost whole, as documented
    (ep,) = episodes
    assert ep.complete and ep.length == 4
    assert [s["action"] for s in ep.steps] == ["m0", "m1", "m2", "m3"]
    assert ep.return_ == 4.0


def _actions(path: Path) -> list[tuple[str, float, bool]]:
    with trj.open(path) as reader:
        assert reader.problems == []
        return [(s["action"], s["reward"], s["terminated"]) for s in reader.steps()]


@pytest.mark.parametrize("buffer_bytes", [1, 4096, 1 << 20])
def test_record_with_batching_writes_the_same_steps(tmp_path: Path, buffer_bytes: int) -> None:
    paths = {b: tmp_path / f"rec{b}.agtr" for b in (0, buffer_bytes)}
    for b, path in paths.items():
        env = Record(gym.make("agentgym/Sokoban-Tiny-v0"), path, buffer_bytes=b)
        env.reset(seed=3)
        for i in range(40):
            _, _, terminated, truncated, _ = env.step(env.unwrapped.admissible_actions()[i % 4])
            if terminated or truncated:
                env.reset(seed=4 + i)
        env.close()
    plain, batched = (_actions(p) for p in paths.values())
    assert len(plain) == 40
    assert batched == plain


def test_batched_frames_reach_the_file_at_episode_end_and_on_flush(tmp_path: Path) -> None:
    path = tmp_path / "flush.agtr"
    rec = trj.Recorder(path, buffer_bytes=1 << 20)
    size_after_header = path.stat().st_size
    ep = rec.start_episode(env_id="x", obs={"text": "a"}, info={})
    rec.record_step(
        ep, action="a", obs={"text": "b"}, reward=1.0, terminated=True, truncated=False, info={}
    )
    assert path.stat().st_size == size_after_header  # still batched in memory
    rec.end_episode(ep)
    assert path.stat().st_size > size_after_header  # flushed with the episode's end
    rec.close()
    with trj.open(path) as reader:
        assert [len(e.steps) for e in reader.episodes()] == [1]


@pytest.mark.parametrize("bad", [-1, 1.5, "64k"])
def test_a_bad_buffer_size_is_a_clear_error(tmp_path: Path, bad: object) -> None:
    with pytest.raises(TrajectoryFormatError, match="buffer_bytes must be an integer >= 0"):
        trj.Recorder(tmp_path / "x.agtr", buffer_bytes=bad)  # type: ignore[arg-type]
