"""agentgym: Gymnasium-style environments for multi-turn agentic RL of LLM and VLM agents.

``import agentgym`` registers every env as ``agentgym/<Name>-v<N>``::

    import gymnasium as gym
    env = gym.make("agentgym:agentgym/Sokoban-Small-v0")
    obs, info = env.reset(seed=0)

See ``agentgym.list_envs()`` or ``agentgym list`` for the ids.
"""

from __future__ import annotations

__version__ = "0.1.0"

from agentgym.core import AgentEnv, ResetOutcome, Snapshot, StepOutcome
from agentgym.env_options import BaseOptions, EnvOptions
from agentgym.parsing import ParsedAction, Tool, ToolCall, parse_action
from agentgym.registry import (
    EnvRecord,
    get_record,
    list_envs,
    make,
    make_multi,
    register,
)

__all__ = [
    "AgentEnv",
    "BaseOptions",
    "EnvOptions",
    "EnvRecord",
    "ParsedAction",
    "ResetOutcome",
    "Snapshot",
    "StepOutcome",
    "Tool",
    "ToolCall",
    "__version__",
    "get_record",
    "list_envs",
    "make",
    "make_multi",
    "parse_action",
    "register",
]

#: Subpackages reachable as attributes after a plain ``import agentgym`` (imported on first
#: use, so ``import agentgym`` stays light): ``agentgym.wrappers.Record(...)`` just works.
_LAZY_SUBMODULES = frozenset(
    {
        "agents",
        "algos",
        "distributed",
        "envs",
        "episodes",
        "evaluation",
        "integrations",
        "pools",
        "rl",
        "rollout",
        "simulators",
        "testing",
        "trajectory",
        "vector",
        "wrappers",
    }
)


def __getattr__(name: str) -> object:
    if name in _LAZY_SUBMODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Gymnasium's vector-env and flatten handlers for the agentgym spaces (registered on import).
from agentgym import space_utils as _space_utils  # noqa: E402,F401
from agentgym.registry import discover as _discover  # noqa: E402

_discover()
