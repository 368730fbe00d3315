"""RLlib: agentgym envs as RLlib multi-agent envs, through RLlib's PettingZoo wrapper.

RLlib's ``ParallelPettingZooEnv`` takes any PettingZoo ``ParallelEnv``. Multi-agent
agentgym ids already are one (``agentgym.make_multi``); single-agent ids become a
one-seat ``ParallelEnv`` via :class:`agentgym.wrappers.seats.AsParallelEnv`.
:func:`rllib_env` returns the wrapped env; :func:`register` makes an id available to
RLlib configs by name (``config.environment("agentgym-Sokoban-Tiny-v0")``).

Observations are agentgym's text dicts, so an RLlib model needs a text encoder (or a
connector that tokenises); the wrapper itself moves text in and out unchanged.
"""

from __future__ import annotations

from typing import Any

from agentgym.error import DependencyMissingError

__all__ = ["parallel_env", "register", "rllib_env"]


def parallel_env(env_id: str, **env_kwargs: Any) -> Any:
    """The PettingZoo ``ParallelEnv`` for any id (single-agent ids get one seat)."""
    import agentgym
    from agentgym.registry import get_record
    from agentgym.wrappers.seats import AsParallelEnv

    record = get_record(env_id)
    if record.multi_agent:
        return agentgym.make_multi(record.id, **env_kwargs)
    return AsParallelEnv(agentgym.make(record.id, **env_kwargs))


def rllib_env(env_id: str, **env_kwargs: Any) -> Any:
    """``ray.rllib``'s ``ParallelPettingZooEnv`` around :func:`parallel_env`."""
    try:
        from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv
    except ImportError as exc:
        raise DependencyMissingError("ray[rllib]", "pip install 'ray[rllib]'") from exc
    return ParallelPettingZooEnv(parallel_env(env_id, **env_kwargs))


def register(env_id: str, name: str | None = None) -> str:
    """Register ``env_id`` with Ray Tune's env registry; returns the name to use."""
    from ray.tune.registry import register_env

    name = name or "agentgym-" + env_id.split("/")[-1]
    register_env(name, lambda config: rllib_env(env_id, **dict(config or {})))
    return name
