"""Adapters that plug agentgym envs into RL frameworks, all over one text-session core.

Each framework module imports its framework lazily, so ``import agentgym.integrations``
never needs verl, TRL, OpenRLHF, SkyRL, GEM, RLlib or verifiers installed:

=====================  ======================================================
module                 what it gives
=====================  ======================================================
``session``            :class:`TextSession` (reset -> messages + tools; step -> new messages)
``tokens``             token-level episodes (prompt/response ids, env tokens masked)
``verl``               an agent loop (``AgentLoopBase``) and a ``BaseInteraction``
``verl_agent``         a verl-agent style environment manager (GiGPO anchors)
``trl``                an ``environment_factory`` class for ``GRPOTrainer``
``openrlhf``           ``AgentInstance`` / ``AgentExecutor``
``skyrl``              a SkyRL-gym ``BaseTextEnv``
``gem``                GEM / ROLL env registration
``rllib``              RLlib multi-agent envs through PettingZoo
``verifiers``          a verifiers ``MultiTurnEnv``
=====================  ======================================================

See docs/integrations.md (the index) and docs/integrations/<framework>.md.
"""

from agentgym.integrations.session import (
    SessionStart,
    SessionTurn,
    TextSession,
    assistant_text,
    make_env,
    message_text,
    messages_text,
    takes_answer_tool,
)

__all__ = [
    "SessionStart",
    "SessionTurn",
    "TextSession",
    "assistant_text",
    "make_env",
    "message_text",
    "messages_text",
    "takes_answer_tool",
]
