"""Group rollouts share seeds and batch the policy; tree rollouts branch via snapshots."""

import time

import gymnasium as gym
import numpy as np

import agentgym  # noqa: F401  (registers envs)
from agentgym.agents.base import Generation
from agentgym.agents.scripted import RandomPolicy
from agentgym.pools import EnvPool
from agentgym.rollout.groups import group_rollouts, tree_rollouts

ENV = "agentgym/Sokoban-Tiny-v0"


class CountingPolicy:
    """Random admissible moves; remembers each call's batch size."""

    def __init__(self):
        self.inner = RandomPolicy(seed=1)
        self.batches = []

    def act(self, inputs):
        self.batches.append(len(inputs))
        return [
            Generation(text=g.text, token_ids=np.zeros(1), logprobs=np.zeros(1))
            for g in self.inner.act(inputs)
        ]


def _pool(n):
    pool = EnvPool([lambda: gym.make(ENV, max_turns=6)] * n, backend="sync")
    pool.reset(seeds=[0] * n)
    return pool


def test_group_members_share_the_task_and_one_call_serves_all_active_envs():
    policy = CountingPolicy()
    with _pool(8) as pool:
        batch = group_rollouts(pool, policy, [11, 12], group_size=4)
    assert len(batch.trajectories) == 8
    by_group = {}
    for t in batch.trajectories:
        by_group.setdefault(t.group_id, set()).add(t.task_id)
    assert all(len(tasks) == 1 for tasks in by_group.values()) and len(by_group) == 2
    # the anchor of a step is the state BEFORE its action: step 0 starts at the reset state
    env = gym.make(ENV, max_turns=6)
    for seed in (11, 12):
        start_key = env.reset(seed=seed)[1]["state_key"]
        firsts = {t.steps[0].state_key for t in batch.trajectories if t.seed == seed}
        assert firsts == {start_key}
    # all 8 envs start together: the first call has 8 inputs, later calls only active ones
    assert policy.batches[0] == 8
    assert sum(policy.batches) == batch.env_steps == sum(len(t.steps) for t in batch.trajectories)
    assert policy.batches == sorted(policy.batches, reverse=True)
    # anchor of step t+1 is the state reached by step t, and steps end with done
    for t in batch.trajectories:
        assert t.steps[-1].done and not any(s.done for s in t.steps[:-1])


def test_more_chains_than_envs_queue_through_the_pool():
    with _pool(3) as pool:
        batch = group_rollouts(pool, CountingPolicy(), [5], group_size=7)
    assert len(batch.trajectories) == 7
    assert len({t.traj_id for t in batch.trajectories}) == 7


def test_tree_rollouts_leaf_count_and_shared_prefixes():
    rng = np.random.default_rng(0)
    with _pool(4) as pool:
        batch = tree_rollouts(pool, CountingPolicy(), [3], trees=2, expand=2, rounds=1, rng=rng)
    # each tree: 1 chain + rounds * expand branches = 3 leaves
    assert len(batch.trajectories) == 6
    trees = {}
    for t in batch.trajectories:
        trees.setdefault(t.tree_id, []).append(t)
    assert sorted(len(v) for v in trees.values()) == [3, 3]
    for leaves in trees.values():
        first = leaves[0]
        for branch in leaves[1:]:
            # a branch re-uses (the same record objects of) a prefix of an earlier path
            shared = 0
            while (
                shared < min(len(first.steps), len(branch.steps))
                and first.steps[shared] is branch.steps[shared]
            ):
                shared += 1
            assert branch.steps[shared:], "a branch adds at least one new step"
            assert all(s.node >= 0 for s in branch.steps)
    # branching restored the env: a branch's first new step starts from its parent's state
    env_steps_chain_only = sum(len(v[0].steps) for v in trees.values())
    assert batch.env_steps > env_steps_chain_only


def test_tree_branch_replays_the_same_world_as_the_parent():
    """Restoring a snapshot and taking the parent's next action reproduces its state key."""
    env = gym.make(ENV)
    env.reset(seed=3)
    env.unwrapped.step(env.unwrapped.admissible_actions()[1])
    snap = env.unwrapped.snapshot()
    action = env.unwrapped.admissible_actions()[2]
    _, r1, *_, info1 = env.unwrapped.step(action)
    env.unwrapped.restore(snap)
    _, r2, *_, info2 = env.unwrapped.step(action)
    assert info1["state_key"] == info2["state_key"] and r1 == r2


def test_tree_rollouts_default_to_two_trees_two_expansions_one_round():
    with _pool(4) as pool:
        before = time.perf_counter()
        batch = tree_rollouts(pool, CountingPolicy(), [3], rng=np.random.default_rng(1))
        took = time.perf_counter() - before
    # trees x (1 chain + rounds x expand branches) = 2 x (1 + 1 x 2)
    assert len(batch.trajectories) == 6
    assert sorted({t.tree_id for t in batch.trajectories}) == [0, 1]
    assert 0 < batch.seconds <= took  # the call's own duration, not a clock reading


def test_a_tree_of_one_step_episodes_keeps_every_leaf():
    """Episodes of one step: the first chain's only node is a leaf (node 1), and every
    branch starts from the root."""
    with EnvPool([lambda: gym.make(ENV, max_turns=1)] * 2) as pool:
        batch = tree_rollouts(
            pool, CountingPolicy(), [4], trees=2, expand=2, rounds=1, rng=np.random.default_rng(0)
        )
    assert len(batch.trajectories) == 6
    assert all(len(t.steps) == 1 for t in batch.trajectories)
