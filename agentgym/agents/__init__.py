"""Policies: turn chats into actions, batched across envs.

See :mod:`agentgym.agents.base` for the interface. Reference policies:
``RandomPolicy`` and ``OraclePolicy`` here; learned ones (a small torch transformer, a
transformers LLM, an OpenAI-compatible HTTP client) in sibling modules.
"""

from agentgym.agents.base import Generation, Policy, PolicyInput
from agentgym.agents.scripted import OraclePolicy, RandomPolicy, make_policy

__all__ = ["Generation", "OraclePolicy", "Policy", "PolicyInput", "RandomPolicy", "make_policy"]
