"""The advantage estimators reproduce the published worked values and hand-computed edge cases."""

import numpy as np
import pytest
import torch

from agentgym.algos import (
    discounted_returns,
    gigpo_advantages,
    grpo_advantages,
    tree_grpo_advantages,
)
from agentgym.error import InvalidConfigError

# Trajectory A visits s0 -> s1 with rewards [0, 10]; B visits s0 -> s2 -> s1 with [0, 0, 0].
GIGPO_CASE = dict(
    rewards=[0.0, 10.0, 0.0, 0.0, 0.0],
    group_ids=["g"] * 5,
    traj_ids=["A", "A", "B", "B", "B"],
    state_keys=["s0", "s1", "s0", "s2", "s1"],
)


def test_discounted_returns_match_the_worked_example():
    got = discounted_returns(GIGPO_CASE["rewards"], GIGPO_CASE["traj_ids"], gamma=0.95)
    np.testing.assert_allclose(got, [9.5, 10, 0, 0, 0])


def test_discounted_returns_with_interleaved_trajectories():
    # rows of two trajectories interleaved; each keeps its step order
    got = discounted_returns([1, 2, 3, 4], ["x", "y", "x", "y"], gamma=0.5)
    np.testing.assert_allclose(got, [1 + 0.5 * 3, 2 + 0.5 * 4, 3, 4])


def test_gigpo_mean_norm_known_values():
    got = gigpo_advantages(**GIGPO_CASE, gamma=0.95, omega=1.0, mode="mean_norm")
    np.testing.assert_allclose(got, [10.75, 11, -8.75, -4, -9], atol=1e-9)


def test_gigpo_mean_std_norm_known_values():
    got = gigpo_advantages(**GIGPO_CASE, gamma=0.95, omega=1.0, mode="mean_std_norm", eps=1e-6)
    np.testing.assert_allclose(got, [1.8026, 1.8026, -1.4374, -0.7303, -1.4374], atol=1e-4)


def test_gigpo_trajectory_statistics_differ_from_row_statistics():
    # per trajectory: scores {10, 0}, mean 5 -> A_E = +5 / -5 (rows would give +6 / -4)
    got = gigpo_advantages(**GIGPO_CASE, mode="mean_norm", episode_stats="trajectories")
    np.testing.assert_allclose(got, [5 + 4.75, 5 + 5, -5 - 4.75, -5, -5 - 5])


def test_gigpo_omega_zero_is_row_weighted_grpo():
    got = gigpo_advantages(**GIGPO_CASE, omega=0.0, mode="mean_std_norm")
    ref = grpo_advantages([10, 10, 0, 0, 0], ["g"] * 5)
    np.testing.assert_allclose(got, ref)


def test_gigpo_invalid_penalty_after_discount_stays_on_its_row():
    base = dict(GIGPO_CASE, state_keys=["a", "b", "c", "d", "e"])  # all anchors singleton
    invalid = [False, False, False, True, False]
    after = gigpo_advantages(
        **base, mode="mean_norm", omega=1.0, invalid=invalid, invalid_penalty=0.1
    )
    plain = gigpo_advantages(**base, mode="mean_norm", omega=1.0)
    # singleton anchors -> A_S = 0 even after the penalty; episode scores untouched
    np.testing.assert_allclose(after, plain)
    shared = dict(GIGPO_CASE, state_keys=["s0", "s1", "s0", "s1", "s0"])
    after = gigpo_advantages(
        **shared, mode="mean_norm", invalid=invalid, invalid_penalty=0.1, penalty_timing="after"
    )
    before = gigpo_advantages(
        **shared, mode="mean_norm", invalid=invalid, invalid_penalty=0.1, penalty_timing="before"
    )
    assert not np.allclose(after, before)
    # "before" lowers B's episode score by 0.1 -> mean over rows shifts
    assert before[2] < after[2]


def test_gigpo_similarity_grouping_merges_near_identical_texts():
    texts = ["search results for red shoes", "a", "search results for red shoes!", "b"]
    exact = gigpo_advantages([1, 0, 0, 0], ["g"] * 4, [0, 0, 1, 1], texts, mode="mean_norm")
    fuzzy = gigpo_advantages(
        [1, 0, 0, 0], ["g"] * 4, [0, 0, 1, 1], texts, mode="mean_norm", similarity_threshold=0.9
    )
    assert fuzzy[0] > exact[0] and fuzzy[2] < exact[2]


def test_tree_grpo_known_values():
    got = tree_grpo_advantages([1, 0, 0, 1, 1, 0], ["q"] * 6, ["t1"] * 3 + ["t2"] * 3)
    np.testing.assert_allclose(got, [2.0676, -1.4902, -1.4902, 1.4902, 1.4902, -2.0676], atol=1e-4)


def test_grpo_hand_computed():
    got = grpo_advantages([3.0, 1.0], [0, 0])
    # mean 2, unbiased std sqrt(2)
    np.testing.assert_allclose(got, [1 / (np.sqrt(2) + 1e-6), -1 / (np.sqrt(2) + 1e-6)])
    np.testing.assert_allclose(grpo_advantages([3.0, 1.0], [0, 0], mode="mean_norm"), [1, -1])


def test_singleton_groups():
    # episode-level singletons keep their raw score (mean 0, std 1)
    np.testing.assert_allclose(grpo_advantages([4.0, 1.0, 3.0], ["a", "b", "b"])[0], 4.0)
    np.testing.assert_allclose(tree_grpo_advantages([2.0], ["q"], ["t"]), [4.0])
    # GiGPO: singleton group of one trajectory of one step: A_E raw, A_S 0
    np.testing.assert_allclose(gigpo_advantages([2.0], [0], [0], ["s"], mode="mean_norm"), [2.0])


@pytest.mark.parametrize("mode", ["mean_std_norm", "mean_norm"])
def test_all_equal_rewards_give_zero_and_no_nan(mode):
    n = 12
    rewards = np.ones(n)
    groups = np.repeat([0, 1], n // 2)
    trajs = np.repeat(np.arange(4), 3)
    states = np.tile(["s0", "s1", "s2"], 4)
    got = gigpo_advantages(rewards, groups, trajs, states, mode=mode)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, 0.0, atol=1e-12)
    np.testing.assert_allclose(grpo_advantages(np.zeros(6), np.zeros(6), mode=mode), 0.0)
    assert np.all(tree_grpo_advantages(np.zeros(4), [0] * 4, [0, 0, 1, 1]) == 0.0)


def test_torch_in_torch_out_and_same_values():
    case = {k: v for k, v in GIGPO_CASE.items()}
    t = torch.tensor(case["rewards"], dtype=torch.float32)
    got = gigpo_advantages(
        t, torch.zeros(5, dtype=torch.long), torch.tensor([0, 0, 1, 1, 1]), case["state_keys"]
    )
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float32
    np.testing.assert_allclose(got.numpy(), [10.75, 11, -8.75, -4, -9], atol=1e-5)
    g = grpo_advantages(torch.tensor([1.0, 0.0]), torch.tensor([7, 7]))
    assert isinstance(g, torch.Tensor)
    tr = tree_grpo_advantages(torch.tensor([1.0, 0, 0, 1, 1, 0]), [0] * 6, [0, 0, 0, 1, 1, 1])
    assert isinstance(tr, torch.Tensor)


def test_groups_are_independent_and_order_does_not_matter():
    rng = np.random.default_rng(0)
    n = 200
    rewards = rng.normal(size=n)
    groups = rng.integers(0, 5, n)
    trajs = groups * 10 + rng.integers(0, 3, n)
    states = rng.integers(0, 4, n)
    a = gigpo_advantages(rewards, groups, trajs, states, mode="mean_std_norm")
    # permuting rows while keeping each trajectory's order gives the permuted result
    perm = np.lexsort((np.arange(n), -groups))  # different interleaving, stable within traj
    b = gigpo_advantages(
        rewards[perm], groups[perm], trajs[perm], states[perm], mode="mean_std_norm"
    )
    np.testing.assert_allclose(a[perm], b, atol=1e-12)


def test_bad_inputs_raise_typed_errors():
    with pytest.raises(InvalidConfigError):
        grpo_advantages([1.0, 2.0], [0])
    with pytest.raises(InvalidConfigError):
        grpo_advantages([1.0], [0], mode="median")
    with pytest.raises(InvalidConfigError):
        gigpo_advantages([1.0], [0], [0], ["s"], episode_stats="steps")
    assert len(grpo_advantages([], [])) == 0


def test_anchor_group_stats_hand_computed():
    from agentgym.agents.base import Generation
    from agentgym.algos.gigpo import anchor_group_stats
    from agentgym.rollout.steps import StepRecord

    def row(traj, state, reward):
        return StepRecord("g", traj, 0, state, Generation(text=""), reward, True, False)

    # two chains of one task both start in A; chain 1 then reaches B and earns 1
    rows = [row(1, "A", 0.0), row(1, "B", 1.0), row(2, "A", 0.0), row(2, "C", 0.0)]
    s = anchor_group_stats(rows)
    assert s["shared"] == 0.5 and s["anchor_size"] == 1.5  # only A repeats
    # A's rows have returns 0.95 and 0: A_S = +-0.475; B and C are alone: A_S = 0
    assert s["step_nonzero"] == 0.5
    # episode returns 1 and 0, row-weighted mean 0.5: A_E = +-0.5 on every row
    assert s["episode_nonzero"] == 1.0
    assert s["step_over_episode"] == pytest.approx((2 * 0.475 / 4) / 0.5)
    # both chains fail alike: no episode advantage, the step one still tells A's rows apart
    same = [row(1, "A", 0.0), row(1, "B", 1.0), row(2, "A", 1.0), row(2, "C", 0.0)]
    s = anchor_group_stats(same)
    assert s["episode_nonzero"] == 0.0 and s["step_nonzero"] == 0.5
    assert np.isnan(s["step_over_episode"])
    with pytest.raises(ValueError):
        anchor_group_stats([])
