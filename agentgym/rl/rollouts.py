"""Rollouts for group-based RL: N envs per task sharing the seed, and trees of branches.

Group rollouts are played by the rollout engine (:mod:`agentgym.rollout`) in its lockstep
mode. Trees still run on :func:`run_chains`: a list of *starts* (a fresh reset with a seed,
or a restored snapshot plus its chat), a pool of env slots, and a policy. Each turn every
active slot contributes one :class:`~agentgym.agents.PolicyInput` and the policy is called
ONCE for all of them; envs finish at different turns and are stepped only while active; a
freed slot takes the next pending start. The chat the policy reads is kept here (system
prompt, task, last ``history_turns`` turn pairs), so it can be branched with the env.

* :func:`group_rollouts` — GRPO / GiGPO: for each task seed, ``group_size`` chains from the
  same reset. Each step row keeps its anchor ``state_key`` (the state BEFORE the action).
* :func:`tree_rollouts` — Tree-GRPO: per task ``trees`` chains, then ``rounds`` rounds
  each expanding ``expand`` nodes per tree, drawn uniformly with replacement from the root
  and the non-leaf step nodes, continued to the end from the env's ``snapshot()``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentgym.agents.base import Policy, PolicyInput
from agentgym.rollout.engine import EpisodeCallbacks, RolloutConfig, RolloutEngine
from agentgym.rollout.events import EpisodeSummary, StepEvent
from agentgym.rollout.records import Episode
from agentgym.rollout.sources import PoolEnvSource
from agentgym.rollout.steps import (
    Chat,
    RolloutBatch,
    StepRecord,
    Trajectory,
    merge_step_info,
)
from agentgym.vector import EnvPool
from agentgym.wrappers.chat import observation_message


@dataclass
class Start:
    """Where a chain begins: a fresh ``reset(seed)`` or a restored snapshot."""

    group_id: str
    seed: int
    snapshot: Any = None
    chat: Chat | None = None
    info: dict[str, Any] | None = None
    tag: Any = None
    """Caller's bookkeeping (e.g. tree and parent node), handed back with the chain."""


@dataclass
class Chain:
    """The steps a start produced, with the env snapshot and chat after each (if kept)."""

    start: Start
    task_id: str
    root_snapshot: Any
    root_chat: Chat
    root_info: dict[str, Any]
    steps: list[StepRecord]
    snapshots: list[Any]
    chats: list[Chat]
    infos: list[dict[str, Any]]


def run_chains(
    pool: EnvPool,
    policy: Policy,
    starts: Sequence[Start],
    *,
    next_traj_id: Callable[[], int],
    history_turns: int | None = 1,
    keep_snapshots: bool = False,
    stats: dict[str, float] | None = None,
    on_chain_end: Callable[[Chain], None] | None = None,
    on_reset: Callable[[int, int, dict, dict], None] | None = None,
    on_step: Callable[[StepEvent], None] | None = None,
    on_end: Callable[[int, EpisodeSummary], None] | None = None,
) -> list[Chain]:
    """Run every start to the end of its episode; see the module docstring.

    Each :class:`PolicyInput` carries the unwrapped env when the pool holds its envs in
    this process (thread and sync backends), so privileged scripted policies (the oracle,
    noisy demonstrators) run through the same loop as learned ones. ``on_chain_end`` is
    called with each finished chain (e.g. to advance a progress bar).

    ``on_reset(slot, k, obs, info)``, ``on_step(event)`` and ``on_end(slot, summary)`` have
    the signatures of :func:`agentgym.episodes.play`'s callbacks, so
    :meth:`agentgym.trajectory.Recorder.play_callbacks` records these rollouts unchanged
    (``k`` is the start's index; the summary's ``env_id`` is empty, as the pool does not
    know it). They see only chains that begin with a reset: a branch restored from a
    snapshot is not a whole episode.
    """
    stats = stats if stats is not None else {}
    pending = list(range(len(starts)))[::-1]
    free = list(range(pool.num_envs))[::-1]
    active: dict[int, int] = {}  # slot -> start index
    chains: list[Chain | None] = [None] * len(starts)
    chats: dict[int, Chat] = {}
    infos: dict[int, dict[str, Any]] = {}
    trajs: dict[int, int] = {}
    watched: set[int] = set()  # slots whose chain began with a reset (seen by the callbacks)

    def begin(slot: int, k: int) -> None:
        st = starts[k]
        if st.snapshot is None:
            obs, info = pool.reset([slot], seeds=[st.seed])[0]
            chat = Chat.after_reset(obs, info)
        else:
            pool.call("restore", st.snapshot, indices=[slot])
            assert st.chat is not None and st.info is not None
            chat, info = st.chat.branch(), dict(st.info)
        root_snap = pool.call("snapshot", indices=[slot])[0] if keep_snapshots else None
        chats[slot], infos[slot] = chat, info
        trajs[slot] = next_traj_id()
        chains[k] = Chain(
            st, info.get("task_id", ""), root_snap, chat.branch(), dict(info), [], [], [], []
        )
        active[slot] = k
        watched.discard(slot)
        if st.snapshot is None and (on_reset or on_step or on_end):
            watched.add(slot)
            if on_reset is not None:
                on_reset(slot, k, obs, info)

    while pending and free:
        begin(free.pop(), pending.pop())
    while active:
        slots = sorted(active)
        inputs = [
            PolicyInput(
                messages=chats[s].messages(history_turns),
                info=infos[s],
                env=pool.envs[s].unwrapped if pool.envs else None,
            )
            for s in slots
        ]
        t0 = time.perf_counter()
        gens = policy.act(inputs)
        policy_ms = (time.perf_counter() - t0) * 1000 / len(slots)
        stats["policy_calls"] = stats.get("policy_calls", 0) + 1
        stats["tokens"] = stats.get("tokens", 0) + sum(
            0 if g.token_ids is None else len(g.token_ids) for g in gens
        )
        t0 = time.perf_counter()
        results = pool.step({s: g.text for s, g in zip(slots, gens)})
        env_ms = (time.perf_counter() - t0) * 1000 / len(slots)
        stats["env_steps"] = stats.get("env_steps", 0) + len(slots)
        done_slots = []
        for s, gen in zip(slots, gens):
            res = results[s]
            chain = chains[active[s]]
            assert chain is not None
            done = bool(res.terminated or res.truncated)
            chain.steps.append(
                StepRecord(
                    group_id=starts[active[s]].group_id,
                    traj_id=trajs[s],
                    step=len(chain.steps),
                    state_key=str(infos[s].get("state_key", "")),
                    generation=gen,
                    reward=float(res.reward),
                    valid=bool(res.info.get("action_valid", True)),
                    done=done,
                    success=bool(res.info.get("success", False)) if done else False,
                )
            )
            chats[s].turns.append(
                ({"role": "assistant", "content": gen.text}, observation_message(res.obs, "user"))
            )
            merged = infos[s] = merge_step_info(infos[s], res.info)
            if keep_snapshots:
                chain.snapshots.append(None)  # live ones filled below in one pool call
                chain.chats.append(chats[s].branch())
                chain.infos.append(dict(merged))
            if s in watched:
                if on_step is not None:
                    on_step(StepEvent.of(s, active[s], gen, res, policy_ms, env_ms))
                if done and on_end is not None:
                    on_end(s, _summary(chain, active[s], res))
            if done:
                done_slots.append(s)
        if keep_snapshots:
            live = [s for s in slots if s not in done_slots]
            if live:
                snaps = pool.call("snapshot", indices=live)
                for s, snap in zip(live, snaps):
                    chain = chains[active[s]]
                    assert chain is not None
                    chain.snapshots[-1] = snap
        for s in done_slots:
            if on_chain_end is not None:
                finished = chains[active[s]]
                assert finished is not None
                on_chain_end(finished)
            del active[s]
            free.append(s)
        while pending and free:
            begin(free.pop(), pending.pop())
    return [c for c in chains if c is not None]


def _summary(chain: Chain, k: int, last: Any) -> EpisodeSummary:
    """A finished chain as :func:`agentgym.episodes.play` reports an episode.

    ``last`` is the final step's result. ``components`` stays empty: the per-step
    components reach ``on_step`` with each event.
    """
    return EpisodeSummary(
        env_id="",
        episode=k,
        seed=chain.start.seed,
        task_id=chain.task_id,
        turns=len(chain.steps),
        total_reward=float(sum(r.reward for r in chain.steps)),
        success=chain.steps[-1].success,
        invalid_actions=sum(not r.valid for r in chain.steps),
        terminated=bool(last.terminated),
        truncated=bool(last.truncated),
        error=last.info.get("env_error"),
    )


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
    tokens = _TokenCount(on_step)
    config = RolloutConfig(
        group_size=group_size,
        max_in_flight=pool.num_envs,
        partial=False,
        history_turns=history_turns,
        env_timeout_s=env_timeout_s,
        group_prefix=group_prefix,
        lockstep=True,
        lane_reuse="highest",
    )
    hooks = EpisodeCallbacks(on_reset, tokens, on_end, on_episode)
    engine = RolloutEngine(PoolEnvSource(pool), policy, [int(s) for s in seeds], config, hooks)
    collection = engine.run_to_end(len(seeds))
    played = [ep for g in collection.groups if g.usable for ep in g.members]
    next_id = traj_counter or _Counter()
    trajs = []
    for ep in sorted(played, key=lambda ep: ep.index):
        traj_id = next_id()
        for row in ep.steps:
            row.traj_id, row.policy_version = traj_id, None
        trajs.append(Trajectory(traj_id, ep.group_id, ep.seed, ep.task_id, ep.steps))
    return RolloutBatch(
        trajs,
        collection.summary.env_steps,
        len(engine.policy_batches),
        tokens.n,
        time.perf_counter() - t0,
    )


class _TokenCount:
    """An ``on_step`` that counts the generations' token ids, then passes the event on."""

    def __init__(self, then: Callable[[StepEvent], None] | None):
        self.then = then
        self.n = 0

    def __call__(self, event: StepEvent) -> None:
        ids = event.generation.token_ids
        self.n += 0 if ids is None else len(ids)
        if self.then is not None:
            self.then(event)


@dataclass
class _Node:
    parent: int  # -1 for children of the root
    record: StepRecord | None
    snapshot: Any
    chat: Chat
    info: dict[str, Any]
    done: bool


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
) -> RolloutBatch:
    """Tree-GRPO sampling (see the module docstring); one trajectory per root-to-leaf path.

    Nodes are complete agent steps. Every tree starts as one full chain from ``reset(seed)``;
    each round samples ``expand`` nodes per tree uniformly WITH replacement from the root and
    its non-terminal step nodes, restores the env and chat there and continues to the end.
    ``Trajectory.tree_id`` says which tree a leaf belongs to (unique per task).
    """
    t0 = time.perf_counter()
    counter = traj_counter or _Counter()
    stats: dict[str, float] = {}
    # forest[(seed, tree)] -> node list; node 0 is the root (state after reset)
    forest: dict[tuple[int, int], list[_Node]] = {}

    def absorb(chains: list[Chain]) -> None:
        for c in chains:
            seed, tree, parent = c.start.tag
            nodes = forest.setdefault((seed, tree), [])
            if not nodes:
                nodes.append(_Node(-2, None, c.root_snapshot, c.root_chat, c.root_info, False))
            prev = parent
            for rec, snap, chat, info in zip(c.steps, c.snapshots, c.chats, c.infos):
                nodes.append(_Node(prev, rec, snap, chat, info, rec.done))
                rec.node = len(nodes) - 1
                prev = len(nodes) - 1

    starts = [
        Start(group_id=f"{group_prefix}{seed}", seed=int(seed), tag=(int(seed), m, 0))
        for seed in seeds
        for m in range(trees)
    ]

    def play(starts: list[Start]) -> list[Chain]:
        return run_chains(
            pool,
            policy,
            starts,
            next_traj_id=counter,
            history_turns=history_turns,
            keep_snapshots=True,
            stats=stats,
        )

    absorb(play(starts))
    for _ in range(rounds):
        starts = []
        for (seed, tree), nodes in forest.items():
            open_nodes = [i for i, n in enumerate(nodes) if not n.done]
            for pick in rng.choice(open_nodes, size=expand, replace=True):
                n = nodes[int(pick)]
                starts.append(
                    Start(
                        group_id=f"{group_prefix}{seed}",
                        seed=seed,
                        snapshot=n.snapshot,
                        chat=n.chat,
                        info=n.info,
                        tag=(seed, tree, int(pick)),
                    )
                )
        absorb(play(starts))
    trajs = []
    for (seed, tree), nodes in forest.items():
        task_id = str(nodes[0].info.get("task_id", ""))
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
                Trajectory(counter(), f"{group_prefix}{seed}", seed, task_id, path, tree_id=tree)
            )
    return RolloutBatch(
        trajs,
        int(stats.get("env_steps", 0)),
        int(stats.get("policy_calls", 0)),
        int(stats.get("tokens", 0)),
        time.perf_counter() - t0,
    )
