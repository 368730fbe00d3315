"""OpenRLHF: an ``AgentInstance`` / ``AgentExecutor`` pair for any agentgym env.

OpenRLHF's multi-turn agent mode (``--agent_func_path my_agent.py``) loads a file that
defines ``AgentInstance`` (subclass of ``AgentInstanceBase``: async ``reset(states)`` ->
``{"observation": text}``, async ``step(states)`` -> ``{"rewards", "scores",
"environment_feedback", "done", "extra_logs"}``) and ``AgentExecutor`` (subclass of
``MultiTurnAgentExecutor``). It works on raw text: the executor appends the model's
output and the env feedback to one string and tokenises it.

:func:`make_agent_classes` writes both classes for an env id. Each prompt's ``label``
names the episode (``{"seed": 3}`` or ``{"task_id": ...}`` as JSON, or a bare integer
seed). ``reset`` replaces the prompt by the env's opening chat rendered with ``template``
(ChatML by default, matching Qwen-style models), and each feedback is rendered as the
closing of the assistant turn, the env's message and the next assistant header.

Example ``my_agent.py`` for ``--agent_func_path``::

    from agentgym.integrations.openrlhf import make_agent_classes
    AgentInstance, AgentExecutor = make_agent_classes("agentgym/Sokoban-Tiny-v0")
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from agentgym.error import DependencyMissingError
from agentgym.integrations.session import Message, TextSession

__all__ = ["chatml", "make_agent_classes", "parse_label"]


def chatml(messages: Sequence[Message], *, close_assistant: bool = False) -> str:
    """Messages in ChatML, ending with an open assistant header."""
    out = "<|im_end|>\n" if close_assistant else ""
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        out += f"<|im_start|>{m['role']}\n{content}<|im_end|>\n"
    return out + "<|im_start|>assistant\n"


def parse_label(label: Any) -> tuple[int | None, dict[str, Any] | None]:
    """``(seed, options)`` from an OpenRLHF label (JSON object, integer, or None)."""
    if label is None or label == "":
        return None, None
    if isinstance(label, int):
        return label, None
    data = label
    if isinstance(label, str):
        try:
            data = json.loads(label)
        except ValueError:
            return None, {"task_id": label}
    if isinstance(data, int):
        return data, None
    if isinstance(data, dict):
        seed = data.get("seed")
        options = {"task_id": data["task_id"]} if data.get("task_id") else None
        return (None if seed is None else int(seed)), options
    return None, None


def _base_classes() -> tuple[type, type]:
    try:
        from openrlhf.utils.agent import AgentInstanceBase, MultiTurnAgentExecutor
    except ImportError as exc:
        raise DependencyMissingError("openrlhf", "pip install openrlhf") from exc
    return AgentInstanceBase, MultiTurnAgentExecutor


def make_agent_classes(
    env_id: str,
    *,
    env_kwargs: dict[str, Any] | None = None,
    template: Callable[..., str] = chatml,
    bases: tuple[type, type] | None = None,
) -> tuple[type, type]:
    """``(AgentInstance, AgentExecutor)`` for ``env_id`` (see the module docstring).

    ``bases`` overrides OpenRLHF's ``(AgentInstanceBase, MultiTurnAgentExecutor)``.
    """
    import torch

    instance_base, executor_base = bases or _base_classes()
    kwargs = dict(env_kwargs or {})

    class AgentInstance(instance_base):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kw: Any) -> None:
            self.session = TextSession(env_id, env_kwargs=kwargs)

        async def reset(self, states: dict, **kw: Any) -> dict:
            seed, options = parse_label(states.get("label"))
            start = await self.session.areset(seed, options)
            return {"observation": template(start.messages)}

        async def step(self, states: dict, **kw: Any) -> dict:
            turn = await self.session.astep(states.get("action_text", ""))
            feedback = "" if turn.done else template(turn.messages, close_assistant=True)
            score = self.session.total_reward
            return {
                "rewards": torch.tensor(turn.reward),
                "scores": torch.tensor(score),
                "environment_feedback": feedback,
                "done": turn.done,
                "sampling_params": states.get("sampling_params"),
                "extra_logs": {
                    "action_valid": torch.tensor(float(turn.info.get("action_valid", False))),
                    "success": torch.tensor(float(self.session.success)),
                },
            }

    class AgentExecutor(executor_base):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            super().__init__(AgentInstance)

    AgentInstance.__qualname__ = AgentInstance.__name__ = "AgentInstance"
    AgentExecutor.__qualname__ = AgentExecutor.__name__ = "AgentExecutor"
    return AgentInstance, AgentExecutor
