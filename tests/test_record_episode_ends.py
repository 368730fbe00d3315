"""Record writes each episode's end as what happened: terminated, truncated or aborted.

The wrapper runs a tiny counter env (tests/fake_envs.py) so each case is a few steps; every
assertion reads the file back and checks the recorded values, not only that a frame exists.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from agentgym.wrappers import Record

from agentgym.trajectory import Recorder, TrajectoryReader
from tests.fake_envs import CounterEnv

BAD = "not a tool call"


def _episodes(path: Path) -> list:
    with TrajectoryReader(path) as reader:
        return list(reader.episodes())


def test_a_truncated_episode_is_recorded_as_truncated(tmp_path: Path):
    path = tmp_path / "t.agtr"
    env = Record(CounterEnv(max_turns=2), path)
    env.reset(seed=0)
    assert env.step(BAD)[3] is False
    _, reward, terminated, truncated, _ = env.step(BAD)
    assert (terminated, truncated) == (False, True)
    assert env.episode_id is None  # closed at the budget, not left open for reset to abort
    env.close()
    [ep] = _episodes(path)
    assert ep.end["termination"] == "truncated"
    assert (ep.end["terminated"], ep.end["truncated"]) == (False, True)
    assert ep.length == ep.end["length"] == 2
    assert ep.success is False
    assert ep.return_ == pytest.approx(2 * reward)


def test_a_terminated_episode_is_recorded_with_success_and_return(tmp_path: Path):
    path = tmp_path / "t.agtr"
    env = Record(CounterEnv(), path)
    env.reset(seed=3)
    rewards, done = [], False
    while not done:
        _, r, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
        rewards.append(r)
        done = terminated or truncated
    assert terminated and info["success"]
    env.close()
    [ep] = _episodes(path)
    assert ep.end["termination"] == "terminated"
    assert ep.success is True
    assert ep.rewards == pytest.approx(rewards)
    assert ep.return_ == pytest.approx(sum(rewards))
    assert ep.steps[0]["action"].startswith("<tool_call>")


def test_reset_and_close_mid_episode_record_aborted(tmp_path: Path):
    path = tmp_path / "t.agtr"
    env = Record(CounterEnv(), path)
    env.reset(seed=0)
    env.step(BAD)
    env.reset(seed=1)  # abandons the first episode
    env.close()  # abandons the second, which took no step
    first, second = _episodes(path)
    assert (first.end["termination"], first.length) == ("aborted", 1)
    assert (second.end["termination"], second.length) == ("aborted", 0)
    assert first.seed == 0 and second.seed == 1


def test_steps_after_the_end_are_not_recorded(tmp_path: Path):
    path = tmp_path / "t.agtr"
    env = Record(CounterEnv(max_turns=1), path)
    env.reset(seed=0)
    env.step(BAD)
    env.step(BAD)  # after the end: the env answers, the file gets nothing
    env.close()
    [ep] = _episodes(path)
    assert ep.length == 1 and ep.end["termination"] == "truncated"


def test_a_shared_recorder_stays_open_after_the_wrapper_closes(tmp_path: Path):
    path = tmp_path / "t.agtr"
    with Recorder(path) as recorder:
        env = Record(CounterEnv(max_turns=1), recorder)
        env.reset(seed=0)
        env.step(1234)  # not a string: stored as its repr
        env.close()
        env2 = Record(CounterEnv(max_turns=1), recorder)
        env2.reset(seed=5)
        env2.step(BAD)
        env2.close()
    eps = _episodes(path)
    assert [e.seed for e in eps] == [0, 5]
    assert eps[0].steps[0]["action"] == "1234"
    assert all(e.end["termination"] == "truncated" for e in eps)


class _Clock:
    """A stand-in for ``time`` in wrappers.record: perf_counter returns the listed instants."""

    def __init__(self, *instants: float):
        self.instants = list(instants)

    def perf_counter(self) -> float:
        return self.instants.pop(0)


def test_step_timings_are_policy_and_env_milliseconds(tmp_path: Path, monkeypatch):
    import agentgym.wrappers.record as record_module

    # reset returns at 10.0; step 1: called at 10.25, env returns at 10.75, wrapper returns at
    # 11.0; step 2: called at 11.1, env returns at 11.4
    clock = _Clock(10.0, 10.25, 10.75, 11.0, 11.1, 11.4, 11.5)
    monkeypatch.setattr(record_module, "time", clock)
    path = tmp_path / "t.agtr"
    env = Record(CounterEnv(max_turns=2), path)
    env.reset(seed=0)
    env.step(BAD)
    env.step(BAD)
    env.close()
    [ep] = _episodes(path)
    timings = [s["timings"] for s in ep.steps]
    assert timings[0]["policy_ms"] == pytest.approx(250.0)
    assert timings[0]["env_ms"] == pytest.approx(500.0)
    assert timings[1]["policy_ms"] == pytest.approx(100.0)
    assert timings[1]["env_ms"] == pytest.approx(300.0)


def test_an_episode_ended_elsewhere_is_not_written_to_again(tmp_path: Path):
    path = tmp_path / "t.agtr"
    with Recorder(path) as recorder:
        env = Record(CounterEnv(max_turns=3), recorder)
        env.reset(seed=0)
        recorder.end_episode(env.episode_id, aborted=True)  # e.g. a supervisor gave up on it
        env.step(BAD)  # the wrapper must neither raise nor reopen it
        env.close()
    [ep] = _episodes(path)
    assert (ep.length, ep.end["termination"]) == (0, "aborted")
