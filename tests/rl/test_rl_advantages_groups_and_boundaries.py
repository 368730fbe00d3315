"""Advantage estimators pinned by hand-computed values at their boundaries.

Each case is small enough to check on paper: two episode groups sharing one state name, the
two episode-statistics forms, ``omega`` and ``gamma`` weights, the invalid-row penalty before
and after discounting, singleton groups, and the input checks. A small change to any of those
rules changes at least one number below.
"""

from __future__ import annotations

import numpy as np
import pytest

from agentgym.algos import gigpo_advantages, grpo_advantages, tree_grpo_advantages
from agentgym.algos.advantages import discounted_returns, group_normalize
from agentgym.error import InvalidConfigError

TWO_TRAJ_ROWS = {  # trajectory x: s0 -> s1 with rewards 0, 1; trajectory y: s0 with reward 0
    "group_ids": ["a", "a", "a"],
    "traj_ids": ["x", "x", "y"],
    "state_keys": ["s0", "s1", "s0"],
}


def test_gigpo_anchor_groups_are_keyed_per_episode_group():
    # one state name "s" in two groups: the anchors must stay apart (merged: [0, -2, 2, 0])
    got = gigpo_advantages([1.0, 0.0, 3.0, 2.0], ["a", "a", "b", "b"], [1, 2, 3, 4], ["s"] * 4)
    np.testing.assert_allclose(got, [1.0, -1.0, 1.0, -1.0])


def test_gigpo_mean_std_norm_divides_by_the_unbiased_std():
    got = gigpo_advantages(
        [1.0, 0.0, 3.0, 2.0], ["a", "a", "b", "b"], [1, 2, 3, 4], ["s"] * 4, mode="mean_std_norm"
    )
    # each half: 0.5 / (sqrt(0.5) + eps), from the episode term and the step term alike
    np.testing.assert_allclose(got, [1.4142, -1.4142, 1.4142, -1.4142], atol=1e-4)


def test_gigpo_row_statistics_omega_and_gamma_by_hand():
    # A_E over rows: scores [1, 1, 0], mean 2/3 -> [1/3, 1/3, -2/3]
    # returns with gamma 0.5: x: [0.5, 1.0], y: [0.0]; anchor s0 holds [0.5, 0.0] -> [0.25, -0.25]
    # anchor s1 is a singleton -> 0; A = A_E + 2 * A_S
    got = gigpo_advantages([0.0, 1.0, 0.0], **TWO_TRAJ_ROWS, gamma=0.5, omega=2.0)
    np.testing.assert_allclose(got, [1 / 3 + 0.5, 1 / 3, -2 / 3 - 0.5])


def test_gigpo_trajectory_statistics_count_each_trajectory_once():
    # A_E over trajectories: scores [1, 0] -> [0.5, -0.5]; A_S as above with omega 1
    got = gigpo_advantages(
        [0.0, 1.0, 0.0], **TWO_TRAJ_ROWS, gamma=0.5, episode_stats="trajectories"
    )
    np.testing.assert_allclose(got, [0.75, 0.5, -0.75])


PENALTY_CASE = {
    "rewards": [1.0, 1.0, 1.0, 1.0],
    "group_ids": ["a"] * 4,
    "traj_ids": ["x", "x", "y", "y"],
    "state_keys": ["s0", "s1", "s0", "s1"],
    "gamma": 0.5,
    "invalid": [1, 0, 0, 0],
    "invalid_penalty": 1.0,
}


def test_gigpo_penalty_before_discount_lowers_the_episode_score_and_earlier_returns():
    # rewards become [0, 1, 1, 1]: episode scores x=1, y=2; returns x0=0.5, y0=1.5
    got = gigpo_advantages(**PENALTY_CASE, penalty_timing="before")
    np.testing.assert_allclose(got, [-1.0, -0.5, 1.0, 0.5])


def test_gigpo_penalty_after_discount_touches_only_the_invalid_row():
    # episode scores stay equal (0); x0's return 1.5 - 1 = 0.5 against y0's 1.5
    got = gigpo_advantages(**PENALTY_CASE, penalty_timing="after")
    np.testing.assert_allclose(got, [-0.5, 0.0, 0.5, 0.0])


def test_gigpo_without_invalid_rows_ignores_the_penalty():
    case = {**PENALTY_CASE, "invalid": [0, 0, 0, 0]}
    for timing in ("before", "after"):
        np.testing.assert_allclose(gigpo_advantages(**case, penalty_timing=timing), [0.0] * 4)


def test_gigpo_rejects_unknown_options_and_unequal_lengths():
    with pytest.raises(InvalidConfigError, match="episode_stats"):
        gigpo_advantages([1.0], ["a"], ["x"], ["s"], episode_stats="row")
    with pytest.raises(InvalidConfigError, match="penalty_timing"):
        gigpo_advantages([1.0], ["a"], ["x"], ["s"], penalty_timing="never")
    with pytest.raises(InvalidConfigError, match="one entry per row"):
        gigpo_advantages([1.0, 2.0], ["a", "a"], ["x", "x"], ["s"])
    assert gigpo_advantages([], [], [], []).size == 0


def test_discounted_returns_three_steps_by_hand():
    got = discounted_returns([1.0, 2.0, 3.0, 4.0], ["a", "a", "a", "b"], gamma=0.5)
    np.testing.assert_allclose(got, [1 + 0.5 * 2 + 0.25 * 3, 2 + 0.5 * 3, 3.0, 4.0])
    with pytest.raises(InvalidConfigError, match="one entry per row"):
        discounted_returns([1.0, 2.0], ["a"])


def test_grpo_modes_and_singletons():
    np.testing.assert_allclose(grpo_advantages([1.0, 3.0], ["g", "g"], mode="mean_norm"), [-1, 1])
    # unbiased std of [1, 3] is sqrt(2): 1 / (sqrt(2) + eps)
    np.testing.assert_allclose(
        grpo_advantages([1.0, 3.0], ["g", "g"]), [-0.70711, 0.70711], atol=1e-5
    )
    np.testing.assert_allclose(grpo_advantages([2.0, 5.0], ["g", "h"]), [2.0, 5.0])
    with pytest.raises(InvalidConfigError, match="mode"):
        grpo_advantages([1.0], ["g"], mode="std")


def test_group_normalize_singleton_policies():
    x = np.array([2.0, 4.0, 7.0])
    codes = np.array([0, 0, 1])
    np.testing.assert_allclose(group_normalize(x, codes, mode="mean_norm"), [-1.0, 1.0, 7.0])
    np.testing.assert_allclose(
        group_normalize(x, codes, mode="mean_norm", singleton="zero"), [-1.0, 1.0, 0.0]
    )
    with pytest.raises(InvalidConfigError, match="singleton"):
        group_normalize(x, codes, singleton="drop")


def test_group_normalize_eps_is_added_to_the_std():
    # std of [0, 2] is sqrt(2); with eps = 1 the advantage is 1 / (sqrt(2) + 1)
    got = group_normalize(np.array([0.0, 2.0]), np.array([0, 0]), eps=1.0)
    np.testing.assert_allclose(got, [-1 / (np.sqrt(2) + 1), 1 / (np.sqrt(2) + 1)])


def test_tree_grpo_sums_inter_task_and_intra_tree_terms():
    # task q: leaves [1, 0, 2, 2] in trees t0=[1, 0] and t1=[2, 2]; task r: one leaf
    got = tree_grpo_advantages([1.0, 0.0, 2.0, 2.0, 9.0], list("qqqqr"), [0, 0, 1, 1, 0])
    eps = 1e-6  # the default, added to each std
    mean, std = 1.25, np.std([1.0, 0.0, 2.0, 2.0], ddof=1) + eps
    intra = 0.5 / (np.sqrt(0.5) + eps)
    want = [(1 - mean) / std + intra, (0 - mean) / std - intra, (2 - mean) / std, (2 - mean) / std]
    np.testing.assert_allclose(got[:4], want, rtol=1e-12)
    assert got[4] == pytest.approx(18.0)  # a lone leaf keeps its raw score in both terms


def test_numpy_key_columns_group_like_lists():
    # integer and fixed-width string arrays take numpy's coding path; the groups must match
    rewards = [1.0, 0.0, 3.0, 2.0]
    want = [1.0, -1.0, 1.0, -1.0]
    got = gigpo_advantages(
        np.array(rewards), np.array([7, 7, 9, 9]), np.array([1, 2, 3, 4]), np.array(["s"] * 4)
    )
    np.testing.assert_allclose(got, want)
    got = grpo_advantages(np.array([1.0, 3.0, 5.0]), np.array(["b", "b", "a"]), mode="mean_norm")
    np.testing.assert_allclose(got, [-1.0, 1.0, 5.0])


def test_empty_inputs_give_empty_advantages():
    assert tree_grpo_advantages([], [], []).size == 0
    assert grpo_advantages([], []).size == 0
    assert discounted_returns([], []).size == 0
