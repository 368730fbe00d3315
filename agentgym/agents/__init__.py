"""Policies: turn chats into actions, batched across envs.

See :mod:`agentgym.agents.base` for the interface. Reference policies:
``RandomPolicy`` and ``OraclePolicy`` here; learned ones (a small torch transformer, a
transformers LLM, an OpenAI-compatible HTTP client) in sibling modules.
"""

from typing import Any

from agentgym.agents.base import Generation, Policy, PolicyInput
from agentgym.agents.scripted import NoisyPolicy, OraclePolicy, RandomPolicy, make_policy

__all__ = [
    "Generation",
    "HFPolicy",
    "HTTPPolicy",
    "NoisyPolicy",
    "OraclePolicy",
    "Policy",
    "PolicyInput",
    "RandomPolicy",
    "TransformerConfig",
    "TransformerPolicy",
    "load_policy",
    "make_policy",
]

_LAZY = {
    "TransformerPolicy": "agentgym.agents.transformer",
    "TransformerConfig": "agentgym.agents.transformer",
    "HFPolicy": "agentgym.agents.hf",
    "HTTPPolicy": "agentgym.agents.http",
    "load_policy": "agentgym.agents.load",
}


def __getattr__(name: str) -> Any:
    """Learned policies load on first use, so importing agentgym never imports torch."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'agentgym.agents' has no attribute {name!r}")
