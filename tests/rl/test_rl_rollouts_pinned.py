"""The trainer's group and tree rollouts and its held-out evaluation are pinned.

Digests taken from the lockstep chain loop (``run_chains``) before these calls moved onto the
rollout engine: group rollouts and held-out runs at commit 1fcf528, Tree-GRPO's tree
rollouts (chains from reset, then branches restored from snapshots) at commit 08ce5ca. Each covers every step row (group, trajectory id, step,
anchor state, action, token ids and log-probabilities, reward, validity, end, success) or
every held-out outcome, with the batch's counters. The sampled byte transformer draws from
its own generator in batch order, so a change in how chains are batched turn by turn, or in
which chain takes a freed env, changes these digests.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import agentgym  # noqa: F401  (registers the envs)
from agentgym.agents.scripted import RandomPolicy
from agentgym.agents.transformer import TransformerConfig, TransformerPolicy
from agentgym.algos.heldout import heldout_eval
from agentgym.pools import EnvPool
from agentgym.rollout.groups import group_rollouts, tree_rollouts


def _array(a: np.ndarray | None) -> Any:
    return None if a is None else np.round(np.asarray(a, dtype=np.float64), 5).tolist()


def batch_digest(batch: Any) -> str:
    rows = [
        [
            s.group_id,
            s.traj_id,
            s.step,
            s.state_key,
            s.generation.text,
            _array(s.generation.token_ids),
            _array(s.generation.logprobs),
            s.reward,
            s.valid,
            s.done,
            s.success,
            s.node,
        ]
        for t in batch.trajectories
        for s in t.steps
    ]
    trajs = [[t.traj_id, t.group_id, t.seed, t.task_id, t.tree_id] for t in batch.trajectories]
    counts = [batch.env_steps, batch.policy_calls, batch.tokens]
    blob = json.dumps([rows, trajs, counts], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def sampled_transformer(seed: int) -> TransformerPolicy:
    policy = TransformerPolicy(TransformerConfig(d_model=32, n_layers=1), seed=seed)
    policy.config.temperature = 1.0
    return policy


def counter(start: int) -> Any:
    state = {"n": start}

    def next_id() -> int:
        state["n"] += 1
        return state["n"] - 1

    return next_id


def group_case(env_id: str, policy: Any, seeds: list[int], group_size: int, envs: int) -> str:
    with EnvPool([lambda: gym.make(env_id)] * envs) as pool:
        batch = group_rollouts(
            pool,
            policy,
            seeds,
            group_size=group_size,
            history_turns=1,
            group_prefix="it3:",
            traj_counter=counter(40),
        )
    return batch_digest(batch)


def tree_case(env_id: str, policy: Any, seeds: list[int], envs: int, **kwargs: Any) -> str:
    env_kwargs = kwargs.pop("env_kwargs", {})
    with EnvPool([lambda: gym.make(env_id, **env_kwargs)] * envs) as pool:
        batch = tree_rollouts(
            pool,
            policy,
            seeds,
            rng=np.random.default_rng(kwargs.pop("rng_seed")),
            history_turns=1,
            group_prefix="it5:",
            traj_counter=counter(7),
            **kwargs,
        )
    return batch_digest(batch)


def heldout_case(env_id: str, policy: Any, greedy: bool, **kwargs: Any) -> str:
    res = heldout_eval(env_id, policy, greedy=greedy, **kwargs)
    rows = [[o.task_id, o.seed, o.success, o.total_reward, o.turns] for o in res.outcomes]
    blob = json.dumps([res.split, res.mode, rows, res.env_steps], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


CASES = {
    "tree-sokoban-transformer": (
        lambda: tree_case(
            "agentgym/Sokoban-Tiny-v0",
            sampled_transformer(3),
            [4, 9],
            3,
            trees=2,
            expand=2,
            rounds=2,
            rng_seed=5,
        ),
        "21fd2aa938bc7a03",
    ),
    "tree-sokoban-random-wide": (
        lambda: tree_case(
            "agentgym/Sokoban-Tiny-v0",
            RandomPolicy(9),
            [1, 6, 2],
            4,
            trees=3,
            expand=3,
            rounds=1,
            rng_seed=2,
        ),
        "9162184c1c357e9d",
    ),
    "tree-household-transformer": (
        lambda: tree_case(
            "agentgym/Household-v0",
            sampled_transformer(12),
            [3],
            2,
            trees=2,
            expand=2,
            rounds=2,
            rng_seed=8,
            env_kwargs={"max_turns": 6},
        ),
        "f5229384162b0050",
    ),
    "group-sokoban-random": (
        lambda: group_case("agentgym/Sokoban-Tiny-v0", RandomPolicy(5), [3, 8, 1], 3, 4),
        "10a42415e415bc87",
    ),
    "group-sokoban-transformer": (
        lambda: group_case("agentgym/Sokoban-Tiny-v0", sampled_transformer(2), [7, 2], 4, 3),
        "e6fae95020b77cd4",
    ),
    "group-twenty-transformer": (
        lambda: group_case("agentgym/UserTwentyQuestions-v0", sampled_transformer(4), [0, 5], 2, 3),
        "6f5cd7b95b3c1604",
    ),
    "heldout-sokoban-sampled": (
        lambda: heldout_case(
            "agentgym/Sokoban-Tiny-v0", sampled_transformer(6), False, episodes=7, num_envs=3
        ),
        "86436b41d2016b3e",
    ),
    "heldout-sokoban-greedy-k2": (
        lambda: heldout_case(
            "agentgym/Sokoban-Tiny-v0",
            sampled_transformer(8),
            True,
            episodes=4,
            num_envs=3,
            samples_per_task=2,
        ),
        "4aee0dcc80ea0349",
    ),
    "heldout-household-sampled-seeds": (
        lambda: heldout_case(
            "agentgym/Household-v0",
            sampled_transformer(1),
            False,
            seeds=[11, 4, 9],
            num_envs=2,
            env_kwargs={"max_turns": 6},
        ),
        "e1dc51117797aa96",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_trainer_rollouts_are_the_pinned_ones(name: str) -> None:
    run, digest = CASES[name]
    assert run() == digest
