"""Simulated users: deterministic scripted cores, optional LLM wording, record/replay.

See :mod:`agentgym.simulators.users.core` for the user interface and
:mod:`agentgym.simulators.users.wording` for the wording backends and the guard.
"""

from agentgym.simulators.users.core import (
    Decision,
    Dialogue,
    Fact,
    FactUser,
    Opening,
    ScriptedUser,
    ToolResult,
    UserScenario,
    UserTurn,
)
from agentgym.simulators.users.wording import (
    Guard,
    OpenAICompatibleWording,
    ReplayCache,
    TemplateWording,
    TransformersWording,
    WordingBackend,
    WordingRequest,
)

__all__ = [
    "Decision",
    "Dialogue",
    "Fact",
    "FactUser",
    "Guard",
    "OpenAICompatibleWording",
    "Opening",
    "ReplayCache",
    "ScriptedUser",
    "TemplateWording",
    "ToolResult",
    "TransformersWording",
    "UserScenario",
    "UserTurn",
    "WordingBackend",
    "WordingRequest",
]
