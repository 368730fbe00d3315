"""OpenRLHF: an ``AgentInstance`` / ``AgentExecutor`` pair for any agentgym env.

OpenRLHF's multi-turn agent mode (``--train.agent_func_path my_agent.py``) loads a file that
defines ``AgentExecutor`` (a subclass of ``MultiTurnAgentExecutor``) whose instances play
one prompt each through an ``AgentInstance`` (async ``reset(states)`` ->
``{"observation": text}``, async ``step(states)`` -> ``{"rewards", "scores",
"environment_feedback", "done", "extra_logs"}``). The executor works on token ids: the
trained sequence is the prompt's tokens, then for every turn the engine's sampled token
ids followed by the tokens of the env feedback text.

:func:`make_agent_classes` writes both classes for an env id. Each prompt's ``label``
names the episode (``{"seed": 3}`` or ``{"task_id": ...}`` as JSON, or a bare integer
seed). ``reset`` replaces the prompt by the env's opening chat rendered with ``template``
(ChatML by default, matching Qwen-style models), and each feedback is rendered as the end
of the assistant turn, the env's message and the next assistant header.

How the turn ends matters. vLLM's token ids include the sampled EOS (``<|im_end|>`` for
ChatML models) when the model stopped by itself, and not when it ran out of tokens. The
``AgentExecutor`` made here lets each instance see the engine's token ids of the turn, so
the feedback opens with ``<|im_end|>`` only when the turn's tokens lack it: every turn
boundary holds exactly one. The same token ids give the env the turn's text with special
tokens kept (``<tool_call>`` may be one; see :func:`agentgym.integrations.tokens.decode_turn`).
With OpenRLHF's stock executor instead, the instance only sees the text and closes the
turn when the text does not already end with ``<|im_end|>``.

Images: OpenRLHF 0.11's ``reset`` has no image channel, so the chat is text-only: image
parts are replaced by a note saying images were left out (never base64 text).

The env is closed when its episode ends, and by the executor when ``execute`` returns
(OpenRLHF makes one instance per prompt and never closes it).

Example ``my_agent.py`` for ``--train.agent_func_path``::

    from agentgym.integrations.openrlhf import make_agent_classes
    AgentInstance, AgentExecutor = make_agent_classes("agentgym/Sokoban-Tiny-v0")
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentgym.error import DependencyMissingError
from agentgym.integrations.session import Message, TextSession
from agentgym.integrations.tokens import decode_turn, end_of_turn_ids, text_only_messages

__all__ = ["END_OF_TURN", "chatml", "make_agent_classes", "parse_label"]

END_OF_TURN = "<|im_end|>"


def chatml(
    messages: Sequence[Message], *, close_assistant: bool = False, turn_closed: bool = False
) -> str:
    """Messages in ChatML, ending with an open assistant header.

    ``close_assistant`` first ends the assistant turn being written: with ``<|im_end|>\\n``,
    or with just ``\\n`` when ``turn_closed`` (the model's tokens already end with
    ``<|im_end|>``). Image parts become a note (see ``text_only_messages``).
    """
    out = ""
    if close_assistant:
        out = "\n" if turn_closed else f"{END_OF_TURN}\n"
    for m in text_only_messages(messages):
        out += f"<|im_start|>{m['role']}\n{m.get('content') or ''}{END_OF_TURN}\n"
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


@dataclass
class _Turns:
    """What the executor saw of one ``execute`` call: the tokenizer and the last turn's ids."""

    tokenizer: Any
    last_ids: list[int] | None = None
    instances: list[Any] = field(default_factory=list)


_CURRENT: contextvars.ContextVar[_Turns | None] = contextvars.ContextVar(
    "agentgym_openrlhf_turns", default=None
)


class _RecordingEngine:
    """The rollout engine, with each generation's token ids noted for the instance."""

    def __init__(self, engine: Any, turns: _Turns):
        self._engine = engine
        self._turns = turns

    async def generate(self, *args: Any, **kwargs: Any) -> Any:
        out = await self._engine.generate(*args, **kwargs)
        self._turns.last_ids = [int(t) for t in out.outputs[0].token_ids]
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)


def _text_tokenizer(tokenizer: Any) -> Any:
    """A VLM processor's inner tokenizer, or the tokenizer itself."""
    return getattr(tokenizer, "tokenizer", tokenizer)


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
    answer_tool: bool | None = False,
    template: Callable[..., str] = chatml,
    bases: tuple[type, type] | None = None,
) -> tuple[type, type]:
    """``(AgentInstance, AgentExecutor)`` for ``env_id`` (see the module docstring).

    ``template(messages, close_assistant=..., turn_closed=...)`` renders chat text (ChatML by
    default); ``bases`` overrides OpenRLHF's ``(AgentInstanceBase, MultiTurnAgentExecutor)``.
    """
    import torch

    instance_base, executor_base = bases or _base_classes()
    kwargs = dict(env_kwargs or {})

    class AgentInstance(instance_base):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kw: Any) -> None:
            self.session = TextSession(env_id, env_kwargs=kwargs, answer_tool=answer_tool)
            self.closed = False
            turns = _CURRENT.get()
            if turns is not None:
                turns.instances.append(self)

        async def reset(self, states: dict, **kw: Any) -> dict:
            seed, options = parse_label(states.get("label"))
            start = await self.session.areset(seed, options)
            return {"observation": template(start.messages)}

        def _action(self, states: dict) -> tuple[str, bool]:
            """The turn's text for the env, and whether its tokens already end the turn."""
            turns = _CURRENT.get()
            if turns is not None and turns.last_ids is not None:
                tok = _text_tokenizer(turns.tokenizer)
                ids = turns.last_ids
                closed = bool(ids) and ids[-1] in end_of_turn_ids(tok)
                return decode_turn(tok, ids), closed
            text = str(states.get("action_text", ""))
            closed = text.endswith(END_OF_TURN)
            return (text[: -len(END_OF_TURN)] if closed else text), closed

        async def step(self, states: dict, **kw: Any) -> dict:
            action, turn_closed = self._action(states)
            turn = await self.session.astep(action)
            feedback = (
                ""
                if turn.done
                else template(turn.messages, close_assistant=True, turn_closed=turn_closed)
            )
            score = self.session.total_reward
            result = {
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
            if turn.done:
                await self.aclose()
            return result

        async def aclose(self) -> None:
            if not self.closed:
                self.closed = True
                await self.session.aclose()

    class AgentExecutor(executor_base):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            super().__init__(AgentInstance)

        async def execute(
            self,
            prompt: Any,
            label: Any,
            sampling_params: Any,
            max_length: int,
            hf_tokenizer: Any,
            llm_engine: Any,
            images: Any = None,
        ) -> Any:
            turns = _Turns(hf_tokenizer)
            token = _CURRENT.set(turns)
            try:
                return await super().execute(
                    prompt,
                    label,
                    sampling_params,
                    max_length,
                    hf_tokenizer,
                    _RecordingEngine(llm_engine, turns),
                    images=images,
                )
            finally:
                _CURRENT.reset(token)
                for instance in turns.instances:  # episodes cut by max_length end here
                    await instance.aclose()

    AgentInstance.__qualname__ = AgentInstance.__name__ = "AgentInstance"
    AgentExecutor.__qualname__ = AgentExecutor.__name__ = "AgentExecutor"
    return AgentInstance, AgentExecutor
