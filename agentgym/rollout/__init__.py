"""Asynchronous, partial, failure-aware rollouts (see ``docs/rollout.md``).

* :mod:`~agentgym.rollout.engine` — :class:`RolloutEngine`: episodes in flight as asyncio
  tasks, GRPO groups released whole, unfinished episodes carried over (APRIL), failures
  marked ``infra_failure`` and retried or excluded.
* :mod:`~agentgym.rollout.driver` — one episode's task: slot, reset, turns, and where a
  stop leaves it; :mod:`~agentgym.rollout.slots` — env slots out of a source.
* :mod:`~agentgym.rollout.faults` — failures and the errors a stopped call raises.
* :mod:`~agentgym.rollout.policy` — the async policy interface, the OpenAI-compatible HTTP
  policy on ``httpx.AsyncClient``, and a batching wrapper for synchronous policies.
* :mod:`~agentgym.rollout.sources` — where envs come from (local ids, an ``EnvPool``).
* :mod:`~agentgym.rollout.records` — episodes, groups, a collection and its summary.
* :mod:`~agentgym.rollout.starts` — where an episode begins: reset options, or a snapshot
  to branch from (Tree-GRPO), and the branch points an episode keeps.
* :mod:`~agentgym.rollout.training` — collected groups as the flat arrays
  :mod:`agentgym.algos`'s estimators take, infrastructure failures left out.
"""

from __future__ import annotations

from agentgym.rollout.engine import EpisodeCallbacks, RolloutConfig, RolloutEngine
from agentgym.rollout.faults import CollectionError, FailureRunError, InfraFailure
from agentgym.rollout.policy import AsyncHTTPPolicy, AsyncPolicy, BatchingPolicy, as_async
from agentgym.rollout.records import Collection, CollectionSummary, Episode, Group
from agentgym.rollout.sources import (
    EnvSlot,
    EnvSource,
    LocalEnvSource,
    PoolEnvSource,
    ServeEnvSource,
    ServeSessionError,
    SourceClosedError,
)
from agentgym.rollout.starts import BranchPoint, EpisodeStart
from agentgym.rollout.training import TrainingArrays, training_arrays

__all__ = [
    "AsyncHTTPPolicy",
    "AsyncPolicy",
    "BatchingPolicy",
    "BranchPoint",
    "Collection",
    "CollectionError",
    "CollectionSummary",
    "EnvSlot",
    "EnvSource",
    "Episode",
    "EpisodeCallbacks",
    "EpisodeStart",
    "FailureRunError",
    "Group",
    "InfraFailure",
    "LocalEnvSource",
    "PoolEnvSource",
    "RolloutConfig",
    "RolloutEngine",
    "ServeEnvSource",
    "ServeSessionError",
    "SourceClosedError",
    "TrainingArrays",
    "as_async",
    "training_arrays",
]
