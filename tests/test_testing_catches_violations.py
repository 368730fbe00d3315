"""The conformance checks must fail on envs that break the contract (they are not rubber stamps)."""

from __future__ import annotations

import pytest

from agentgym.error import ConformanceError
from agentgym.testing import (
    check_env,
    check_gymnasium_api,
    check_reset_determinism,
    check_snapshot_restore,
    check_state_key,
    check_step_fuzz,
)
from tests.fake_envs import (
    CounterEnv,
    LeakyKeyEnv,
    LossySnapshotEnv,
    NativeCounterEnv,
    NondeterministicEnv,
    RaisingEnv,
    WrongRewardEnv,
)


@pytest.mark.parametrize("cls", [CounterEnv, NativeCounterEnv])
def test_a_correct_env_passes_everything(cls):
    check_env(cls(), factory=cls)


def test_raising_on_an_action_is_caught():
    with pytest.raises(ConformanceError, match=r"\[fuzz\].*never raise"):
        check_step_fuzz(RaisingEnv())


def test_nondeterministic_reset_is_caught():
    with pytest.raises(ConformanceError, match=r"\[determinism\]"):
        check_reset_determinism(NondeterministicEnv())


def test_instance_dependent_state_key_is_caught():
    with pytest.raises(ConformanceError, match=r"\[state_key\].*two instances"):
        check_state_key(LeakyKeyEnv(), factory=LeakyKeyEnv)


def test_reward_outside_its_components_is_caught():
    with pytest.raises(ConformanceError, match=r"\[reward\]"):
        check_step_fuzz(WrongRewardEnv())


def test_lossy_native_snapshot_is_caught():
    with pytest.raises(ConformanceError, match=r"\[snapshot\]"):
        check_snapshot_restore(LossySnapshotEnv())


class ObsOutsideSpaceEnv(CounterEnv):
    """Breaks the contract: images is a list of ints, not a tuple of arrays."""

    def reset(self, *, seed=None, options=None):
        obs, info = super().reset(seed=seed, options=options)
        return {"text": obs["text"], "images": [1]}, info


def test_gymnasium_checker_runs_and_its_failures_surface():
    with pytest.raises(ConformanceError, match=r"\[gymnasium\].*not within the observation space"):
        check_gymnasium_api(ObsOutsideSpaceEnv())
