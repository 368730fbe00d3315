"""Env pools: many envs stepped at once, each only while its episode is active.

Two pools with one API (``reset(indices, seeds=, options=)``, ``step({index: action})``,
``call(name, *args, indices=)``, ``close()``), so a rollout loop takes either:

* :mod:`agentgym.pools.local` — :class:`EnvPool`, the envs in this process (threads), in
  worker processes, or one after another (``backend="thread" | "process" | "sync"``);
* :mod:`agentgym.pools.ray` — :class:`RayEnvPool`, the envs on Ray actors anywhere in a
  cluster, with deadlines, restarts and replacement of lost actors.

They play the role Gymnasium's ``vector/`` plays for classic envs; the rollout core
(:mod:`agentgym.rollout`) drives them. Ray is imported only when a Ray pool is used:
``from agentgym.pools import EnvPool`` needs no Ray. The old module names
``agentgym.vector`` and ``agentgym.distributed`` still import (the same modules).
"""

from __future__ import annotations

from typing import Any

from agentgym.pools.local import EnvFactory, EnvPool, StepResult, worker_cpus

__all__ = [
    "EnvFactory",
    "EnvPool",
    "MakeEnv",
    "RayEnvPool",
    "RemoteEnv",
    "RemoteEnvError",
    "StepResult",
    "ensure_ray",
    "worker_cpus",
]

_RAY_NAMES = frozenset({"MakeEnv", "RayEnvPool", "RemoteEnv", "RemoteEnvError", "ensure_ray"})


def __getattr__(name: str) -> Any:
    if name in _RAY_NAMES:  # agentgym.pools.ray imports Ray itself only when a pool starts
        from agentgym.pools import ray

        return getattr(ray, name)
    raise AttributeError(f"module 'agentgym.pools' has no attribute {name!r}")
