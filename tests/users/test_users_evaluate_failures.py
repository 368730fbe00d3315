"""``evaluate`` on the rollout engine: a failing env raises its own error, nothing is
retried, and an env the caller passed in is played on and left open."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest

import agentgym  # noqa: F401  (registers the envs)
from agentgym.agents.scripted import OraclePolicy
from agentgym.evaluation import evaluate


class CrashesAtStep(gym.Wrapper):
    """Raises at the ``at``-th step over its life; counts resets and closes."""

    def __init__(self, env: gym.Env, at: int):
        super().__init__(env)
        self.at, self.steps, self.resets, self.closed = at, 0, 0, 0

    def reset(self, **kwargs: Any) -> Any:
        self.resets += 1
        return self.env.reset(**kwargs)

    def step(self, action: str) -> Any:
        self.steps += 1
        if self.steps == self.at:
            raise ConnectionResetError("user simulator went away")
        return self.env.step(action)

    def close(self) -> None:
        self.closed += 1
        self.env.close()


def test_an_env_that_raises_stops_the_evaluation_with_its_own_error_and_no_retry() -> None:
    env = CrashesAtStep(gym.make("agentgym/UserFunction-v0"), at=2)
    with pytest.raises(ConnectionResetError, match="user simulator went away"):
        evaluate(env, OraclePolicy(), tasks=2, n=2, ks=(1,))
    assert env.steps == 2 and env.resets == 1  # the crashed first trial was not played again
    assert env.closed == 0  # the caller's env is theirs to close


def test_an_env_given_by_the_caller_is_played_on_and_left_open() -> None:
    env = CrashesAtStep(gym.make("agentgym/UserFunction-v0"), at=10**6)
    report = evaluate(env, OraclePolicy(), tasks=2, n=3, ks=(1, 3))
    assert env.resets == 6 and env.closed == 0
    assert report.summary()["pass^3"] == 1.0
    env.reset(seed=1)  # still usable
    env.close()


def test_an_env_made_here_from_a_factory_is_closed_here() -> None:
    made: list[CrashesAtStep] = []

    def factory() -> gym.Env:
        made.append(CrashesAtStep(gym.make("agentgym/UserFunction-v0"), at=10**6))
        return made[-1]

    evaluate(factory, OraclePolicy(), tasks=1, n=2, ks=(1,))
    assert len(made) == 1 and made[0].closed == 1


class UserSimulatorErrs(gym.Wrapper):
    """Reports a user-simulator error on every step of its ``bad``-th trial (from 1)."""

    def __init__(self, env: gym.Env, bad: int):
        super().__init__(env)
        self.bad, self.trial = bad, 0

    def reset(self, **kwargs: Any) -> Any:
        self.trial += 1
        return self.env.reset(**kwargs)

    def step(self, action: str) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self.trial == self.bad:
            info = {**info, "sim_error": "model server down"}
        return obs, reward, terminated, truncated, info


def test_a_trial_whose_user_simulator_erred_is_counted_once_for_its_task() -> None:
    env = UserSimulatorErrs(gym.make("agentgym/UserFunction-v0"), bad=5)
    report = evaluate(env, OraclePolicy(), tasks=2, n=3, ks=(1,))
    assert [t.sim_errors for t in report.tasks] == [0, 1]  # trial 5 = task 1, trial 1


def test_by_default_the_first_ten_tasks_of_the_split_are_played() -> None:
    env = gym.make("agentgym/UserFunction-v0")
    report = evaluate(env, OraclePolicy(), n=1, ks=(1,))
    assert [t.task_id for t in report.tasks] == list(env.unwrapped.task_ids()[:10])
    report = evaluate(env, OraclePolicy(), tasks=1)  # and four trials each
    assert report.tasks[0].n == 4 and report.ks == (1, 2, 4)


def test_an_env_that_reports_an_env_error_stops_the_evaluation_with_that_cause() -> None:
    """No exception to re-raise (the env said ``info["env_error"]``): the engine's error,
    whose message carries the env's own."""
    from agentgym.rollout import FailureRunError

    class ReportsError(gym.Wrapper):
        def step(self, action: str) -> Any:
            obs, reward, terminated, _, info = self.env.step(action)
            return obs, reward, terminated, True, {**info, "env_error": "worker lost its pipe"}

    with pytest.raises(FailureRunError, match="worker lost its pipe"):
        evaluate(ReportsError(gym.make("agentgym/UserFunction-v0")), OraclePolicy(), n=1, ks=(1,))


class NeverEnds(gym.Wrapper):
    """Hides the end of its env's episode: once the env ended, every step answers its last
    observation again (without ``success``), reward 0, and the episode goes on; counts
    every step."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.steps, self.last = 0, None

    def reset(self, **kwargs: Any) -> Any:
        self.last = None
        return self.env.reset(**kwargs)

    def step(self, action: str) -> Any:
        self.steps += 1
        if self.last is None:
            obs, reward, terminated, truncated, info = self.env.step(action)
            if terminated or truncated:  # from now on: no end, no success
                self.last = (obs, {k: v for k, v in info.items() if k != "success"})
            return obs, reward, False, False, info
        obs, info = self.last
        return obs, 0.0, False, False, info


def test_a_trial_that_never_ends_is_cut_after_max_steps_and_fails() -> None:
    """The safety bound: 100 steps by default, or the caller's; such a trial fails."""
    env = NeverEnds(gym.make("agentgym/UserFunction-v0"))
    report = evaluate(env, OraclePolicy(), tasks=1, n=1, ks=(1,))
    assert env.steps == 100 and report.tasks[0].successes == [False]
    env.steps = 0
    evaluate(env, OraclePolicy(), tasks=1, n=1, ks=(1,), max_steps=7)
    assert env.steps == 7
