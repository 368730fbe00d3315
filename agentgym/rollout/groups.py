"""Rollouts for group-based RL: N envs per task sharing the seed, and trees of branches.

Both are played by the rollout engine (:mod:`agentgym.rollout`) in its lockstep mode: each
turn every running chain contributes one :class:`~agentgym.agents.PolicyInput` and the
policy is called ONCE for all of them; a freed env takes the next chain. The chat the
policy reads (system prompt, task, last ``history_turns`` turn pairs) is the engine's, and
it branches with the env.

* :func:`group_rollouts` — GRPO / GiGPO: for each task seed, ``group_size`` chains from the
  same reset. Each step row keeps its anchor ``state_key`` (the state BEFORE the action).
* :func:`tree_rollouts` — Tree-GRPO: per task ``trees`` chains, then ``rounds`` rounds
  each expanding ``expand`` nodes per tree, drawn uniformly with replacement from the root
  and the non-leaf step nodes, continued to the end from the env's ``snapshot()``
  (:class:`~agentgym.rollout.starts.EpisodeStart` with a snapshot).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from agentgym.agents.base import Policy
from agentgym.pools import EnvPool
from agentgym.rollout.engine import EpisodeCallbacks, RolloutConfig, RolloutEngine
from agentgym.rollout.events import EpisodeSummary, StepEvent
from agentgym.rollout.records import Episode
from agentgym.rollout.sources import PoolEnvSource
from agentgym.rollout.starts import BranchPoint, EpisodeStart
from agentgym.rollout.steps import RolloutBatch, StepRecord, Trajectory


class _Counter:
    def __init__(self) -> None:
        self.n = 0

    def __call__(self) -> int:
        self.n += 1
        return self.n - 1


def group_rollouts(
    pool: EnvPool,
    policy: Policy,
    seeds: Sequence[int],
    *,
    group_size: int,
    history_turns: int | None = 1,
    group_prefix: str = "",
    traj_counter: Callable[[], int] | None = None,
    on_episode: Callable[[Episode], None] | None = None,
    on_reset: Callable[[int, int, dict, dict], None] | None = None,
    on_step: Callable[[StepEvent], None] | None = None,
    on_end: Callable[[int, EpisodeSummary], None] | None = None,
    env_timeout_s: float = 600.0,
) -> RolloutBatch:
    """``group_size`` chains per task seed, all sharing that seed (GRPO / GiGPO).

    Played by the rollout engine in lockstep mode over ``pool``: one policy call per turn
    for every running chain, chains started in order as envs free up (a freed env goes to
    the next chain highest lane first, as this loop always did), so a seeded sampling
    policy gives the same batch every time. Chain ``k`` is the ``k % group_size``-th of seed
    ``seeds[k // group_size]``; trajectory ids come from ``traj_counter`` in that order.

    An env that crashes or does not answer within ``env_timeout_s`` ends its attempt as an
    infrastructure failure, and the chain is played again from reset; a group whose chain
    still fails is left out of the batch (never scored as a zero). ``on_episode(episode)``
    sees every attempt as it ends; ``on_reset``/``on_step``/``on_end`` are
    :func:`agentgym.episodes.play`'s callbacks (e.g. a recorder's ``play_callbacks``; their
    ``slot`` names the attempt). An exception in the policy or a callback is raised here.
    """
    t0 = time.perf_counter()
    if not seeds:
        return RolloutBatch([], 0, 0, 0, 0.0)
    tokens = _TokenCount(on_episode)
    config = RolloutConfig.whole_run(
        pool.num_envs,
        group_size=group_size,
        history_turns=history_turns,
        env_timeout_s=env_timeout_s,
        group_prefix=group_prefix,
    )
    hooks = EpisodeCallbacks(on_reset, on_step, on_end, tokens)
    engine = RolloutEngine(PoolEnvSource(pool), policy, [int(s) for s in seeds], config, hooks)
    collection = engine.run_to_end(len(seeds))
    played = _numbered(collection.usable_episodes, traj_counter or _Counter())
    trajs = [Trajectory(tid, ep.group_id, ep.seed, ep.task_id, ep.steps) for tid, ep in played]
    return RolloutBatch(
        trajs,
        collection.summary.env_steps,
        len(engine.policy_batches),
        tokens.n,
        time.perf_counter() - t0,
    )


def _numbered(played: list[Episode], counter: Callable[[], int]) -> list[tuple[int, Episode]]:
    """``played`` in the order they started, each with the next trajectory id of
    ``counter``, which its step rows take (they lose the engine's policy version: these
    runs have one policy throughout)."""
    numbered = [(counter(), ep) for ep in sorted(played, key=lambda ep: ep.index)]
    for traj_id, ep in numbered:
        for row in ep.steps:
            row.traj_id, row.policy_version = traj_id, None
    return numbered


class _TokenCount:
    """An ``on_episode`` that counts the token ids of every attempt's generations (failed
    attempts too: their tokens were spent), then passes the episode on."""

    def __init__(self, then: Callable[[Episode], None] | None = None):
        self.then = then
        self.n = 0

    def __call__(self, ep: Episode) -> None:
        ids = (row.generation.token_ids for row in ep.steps)
        self.n += sum(0 if t is None else len(t) for t in ids)
        if self.then is not None:
            self.then(ep)


@dataclass
class _Node:
    parent: int  # -1 for children of the root
    record: StepRecord | None
    point: BranchPoint | None
    """Where a branch from this node restores the env (None after a final step)."""
    done: bool


class _Forest:
    """Tree-GRPO's trees: ``(seed, tree)`` -> nodes; node 0 is the root (state after reset)."""

    def __init__(self, group_prefix: str):
        self.prefix = group_prefix
        self.trees: dict[tuple[int, int], list[_Node]] = {}
        self.task_ids: dict[tuple[int, int], str] = {}
        """Each tree's task (its first chain's)."""

    def roots(self, seeds: Sequence[int], trees: int) -> list[EpisodeStart]:
        """One chain from reset per tree."""
        return [
            EpisodeStart(int(seed), group_id=f"{self.prefix}{seed}", tag=(int(seed), m, 0))
            for seed in seeds
            for m in range(trees)
        ]

    def branches(self, expand: int, rng: np.random.Generator) -> list[EpisodeStart]:
        """Per tree, ``expand`` nodes drawn uniformly WITH replacement from the root and its
        non-terminal step nodes, each continued from its branch point."""
        starts = []
        for (seed, tree), nodes in self.trees.items():
            open_nodes = [i for i, n in enumerate(nodes) if not n.done]
            for pick in rng.choice(open_nodes, size=expand, replace=True):
                point = nodes[int(pick)].point
                assert point is not None
                starts.append(
                    EpisodeStart(
                        seed,
                        snapshot=point.snapshot,
                        chat=point.chat,
                        info=point.info,
                        group_id=f"{self.prefix}{seed}",
                        tag=(seed, tree, int(pick)),
                    )
                )
        return starts

    def absorb(self, chains: Sequence[Episode]) -> None:
        """Hang each finished chain under the node it started from."""
        for ep in chains:
            assert ep.start is not None
            seed, tree, parent = ep.start.tag
            nodes = self.trees.setdefault((seed, tree), [])
            if not nodes:
                nodes.append(_Node(-2, None, ep.branch_points[0], False))
                self.task_ids[(seed, tree)] = ep.task_id
            after: list[BranchPoint | None] = [*ep.branch_points[1:], None]  # none after the end
            prev = parent
            for rec, point in zip(ep.steps, after):
                nodes.append(_Node(prev, rec, point, rec.done))
                rec.node = len(nodes) - 1
                prev = len(nodes) - 1

    def leaves(self, counter: Callable[[], int]) -> list[Trajectory]:
        """One trajectory per root-to-leaf path, ids from ``counter``."""
        trajs = []
        for (seed, tree), nodes in self.trees.items():
            task_id = self.task_ids[(seed, tree)]
            for i, n in enumerate(nodes):
                if i == 0 or not n.done:
                    continue
                path: list[StepRecord] = []
                j = i
                while j > 0:
                    rec = nodes[j].record
                    assert rec is not None
                    path.append(rec)
                    j = nodes[j].parent
                path.reverse()
                trajs.append(
                    Trajectory(counter(), f"{self.prefix}{seed}", seed, task_id, path, tree_id=tree)
                )
        return trajs


def tree_rollouts(
    pool: EnvPool,
    policy: Policy,
    seeds: Sequence[int],
    *,
    trees: int = 2,
    expand: int = 2,
    rounds: int = 1,
    rng: np.random.Generator,
    history_turns: int | None = 1,
    group_prefix: str = "",
    traj_counter: Callable[[], int] | None = None,
    env_timeout_s: float = 600.0,
) -> RolloutBatch:
    """Tree-GRPO sampling (see the module docstring); one trajectory per root-to-leaf path.

    Nodes are complete agent steps. Every tree starts as one full chain from ``reset(seed)``;
    each round samples ``expand`` nodes per tree uniformly WITH replacement from the root and
    its non-terminal step nodes, restores the env and chat there and continues to the end.
    ``Trajectory.tree_id`` says which tree a leaf belongs to (unique per task).

    Every round is one lockstep run of the rollout engine over ``pool`` (one policy call per
    turn, a freed env to the next chain highest lane first); the chains keep a branch point
    after every step. A chain whose env fails is played again from its start; one that
    still fails is left out of its tree.
    """
    t0 = time.perf_counter()
    counter = traj_counter or _Counter()
    forest = _Forest(group_prefix)
    totals = {"env_steps": 0, "policy_calls": 0, "tokens": 0}
    config = RolloutConfig.whole_run(
        pool.num_envs,
        group_size=1,
        history_turns=history_turns,
        env_timeout_s=env_timeout_s,
        keep_branch_points=True,
    )
    source = PoolEnvSource(pool)  # one for every round: it knows which envs were reset
    starts = forest.roots(seeds, trees)
    for round_ in range(rounds + 1):
        if round_:
            starts = forest.branches(expand, rng)
        forest.absorb(_play_chains(source, policy, starts, config, counter, totals))
    return RolloutBatch(
        forest.leaves(counter),
        totals["env_steps"],
        totals["policy_calls"],
        totals["tokens"],
        time.perf_counter() - t0,
    )


def _play_chains(
    source: PoolEnvSource,
    policy: Policy,
    starts: list[EpisodeStart],
    config: RolloutConfig,
    counter: Callable[[], int],
    totals: dict[str, int],
) -> list[Episode]:
    """Every start played to its end on the engine; the finished chains in start order,
    each step row's trajectory id drawn from ``counter`` in that order."""
    if not starts:
        return []
    tokens = _TokenCount()
    engine = RolloutEngine(source, policy, starts, config, EpisodeCallbacks(on_episode=tokens))
    collection = engine.run_to_end(len(starts))
    chains = [ep for _, ep in _numbered(collection.usable_episodes, counter)]
    totals["env_steps"] += collection.summary.env_steps
    totals["policy_calls"] += len(engine.policy_batches)
    totals["tokens"] += tokens.n
    return chains
