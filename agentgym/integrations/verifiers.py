"""verifiers: a ``MultiTurnEnv`` over any agentgym env id (tested with verifiers 0.1.14).

verifiers runs rollouts as coroutines: the dataset row's ``prompt`` opens the chat,
``setup_state(state)`` prepares per-rollout state, ``env_response(messages, state)`` answers
each model turn with new messages, and setting ``state["final_env_response"]`` ends the
rollout. The model is called through an OpenAI-compatible client with the env's
``tool_defs``; rewards come from a ``Rubric``.

:func:`load_environment` builds :class:`AgentGymVerifiersEnv` for an id: a dataset whose
prompts are the env's opening chats (one per seed; ``info`` keeps the seed and task id), the
env's tools as verifiers ``tool_defs`` (so the model can make structured calls), a session
per rollout reset to that task, and a rubric whose reward is the summed env reward (plus
``success`` as a zero-weight metric).

verifiers hands ``env_response`` its own pydantic message objects (``AssistantMessage`` with
flat ``ToolCall(id, name, arguments)``); the session core reads them like dicts, so a
structured call is validated by the env exactly like its ``<tool_call>`` text. The env's
reply goes back as ``tool`` messages carrying each call's id. Envs that end with an
``<answer>`` also offer the ``answer`` tool (``answer_tool=None``, the default, turns it on
exactly for them). Images go to the model as OpenAI ``image_url`` parts (verifiers speaks
the OpenAI chat format); pass ``image_format="none"`` for a text-only model (the task text
plus a note that images were left out).

A ``datasets`` column holds one Arrow type, so an image-carrying opening chat (a system
message with string content next to a user message with a list of parts) cannot be stored
as written: :func:`dataset_rows` gives every message of such rows a list of content parts
(text as ``{"type": "text", "text": ...}``). Arrow then fills the keys one part kind lacks
with ``None`` (``image_url`` on text parts, ``text`` on image parts); ``setup_state`` drops
them again, so the model gets the parts exactly as the env wrote them.

When verifiers is not installed the class still exists with the same methods (on a plain
base) so it can be driven directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentgym.integrations.session import TextSession

__all__ = [
    "AgentGymVerifiersEnv",
    "dataset_rows",
    "env_reward",
    "load_environment",
    "opening_rows",
    "success",
    "tool_defs",
]


def _vf() -> Any:
    try:
        import verifiers as vf

        vf.MultiTurnEnv  # noqa: B018  (lazy attribute: fails when verifiers[all] is missing)
        return vf
    except Exception:
        return None


_VF = _vf()
_Base: Any = _VF.MultiTurnEnv if _VF is not None else object


def _cleanup(fn: Any) -> Any:
    """verifiers' ``@vf.cleanup`` (runs once per rollout, however it ended) when available."""
    return _VF.cleanup(fn) if _VF is not None else fn


def opening_rows(
    env_id: str,
    seeds: Sequence[int],
    env_kwargs: dict | None = None,
    *,
    answer_tool: bool | None = None,
    image_format: str = "data_url",
) -> list[dict]:
    """``{"prompt": opening chat, "info": {"env_id", "seed", "task_id"}}`` per seed."""
    return _openings(env_id, seeds, env_kwargs, answer_tool, image_format)[0]


def _openings(
    env_id: str,
    seeds: Sequence[int],
    env_kwargs: dict | None,
    answer_tool: bool | None,
    image_format: str,
) -> tuple[list[dict], list[dict[str, Any]]]:
    """The rows of :func:`opening_rows` and the env's tools (at the first seed).

    One env serves every seed: the contract gives the same opening for the same seed.
    """
    session = TextSession(
        env_id, env_kwargs=env_kwargs, answer_tool=answer_tool, image_format=image_format
    )
    rows: list[dict] = []
    tools: list[dict[str, Any]] = []
    try:
        for s in seeds:
            start = session.reset(seed=int(s))
            if not rows:
                tools = start.tools
            rows.append(
                {
                    "prompt": start.messages,
                    "info": {"env_id": env_id, "seed": int(s), "task_id": start.info["task_id"]},
                }
            )
        if not rows:
            tools = session.reset(seed=0).tools
    finally:
        session.close()
    return rows, tools


def dataset_rows(rows: Sequence[dict]) -> list[dict]:
    """``rows`` with one content type per column: all parts lists if any row has parts.

    Text-only rows come back unchanged. Where any message carries a list of content parts
    (images), every message's string content becomes ``[{"type": "text", "text": ...}]``,
    which ``datasets.Dataset.from_list`` can store (it refuses strings mixed with lists).
    """
    if not any(isinstance(m.get("content"), list) for row in rows for m in row["prompt"]):
        return list(rows)
    return [
        {
            **row,
            "prompt": [
                {**m, "content": [{"type": "text", "text": m["content"]}]}
                if isinstance(m.get("content"), str)
                else m
                for m in row["prompt"]
            ],
        }
        for row in rows
    ]


def _drop_nones(value: Any) -> Any:
    """``value`` without the ``None`` entries Arrow adds to dicts of a merged struct type."""
    if isinstance(value, dict):
        return {k: _drop_nones(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nones(v) for v in value]
    return value


def _plain_message(message: Any) -> dict[str, Any]:
    return message.model_dump() if hasattr(message, "model_dump") else dict(message)


def tool_defs(tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI function schemas (``info["tools"]``) in verifiers' flat ``vf.Tool`` form."""
    out = []
    for tool in tools:
        fn = tool.get("function", tool)
        out.append(
            {
                "name": fn["name"],
                "description": fn.get("description", ""),
                "parameters": fn.get("parameters") or {"type": "object", "properties": {}},
            }
        )
    return out


def env_reward(state: dict[str, Any], **kwargs: Any) -> float:
    """Rubric function: the summed env reward of the rollout."""
    session = state.get("agentgym_session")
    return float(session.total_reward) if session is not None else 0.0


def success(state: dict[str, Any], **kwargs: Any) -> float:
    """Rubric metric: 1.0 if the env reported success."""
    session = state.get("agentgym_session")
    return float(session.success) if session is not None else 0.0


def _role(message: Any) -> Any:
    return message.get("role") if hasattr(message, "get") else getattr(message, "role", None)


class AgentGymVerifiersEnv(_Base):  # type: ignore[misc, valid-type]
    """verifiers ``MultiTurnEnv`` over an agentgym env (see the module docstring)."""

    def __init__(
        self,
        env_id: str,
        *,
        env_kwargs: dict | None = None,
        answer_tool: bool | None = None,
        image_format: str = "data_url",
        **kwargs: Any,
    ):
        self.agentgym_env_id = env_id
        self.agentgym_env_kwargs = dict(env_kwargs or {})
        self.agentgym_answer_tool = answer_tool
        self.agentgym_image_format = image_format
        if _Base is not object:
            super().__init__(**kwargs)

    def _session(self) -> TextSession:
        return TextSession(
            self.agentgym_env_id,
            env_kwargs=self.agentgym_env_kwargs,
            answer_tool=self.agentgym_answer_tool,
            image_format=self.agentgym_image_format,
        )

    async def setup_state(self, state: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        info = state.get("info") or {}
        if state.get("prompt"):  # the parts as the env wrote them (see the module docstring)
            state["prompt"] = self._messages(
                [_drop_nones(_plain_message(m)) for m in state["prompt"]]
            )
        session = self._session()
        task = info.get("task_id")
        await session.areset(info.get("seed"), {"task_id": task} if task else None)
        state["agentgym_session"] = session
        return state

    async def env_response(
        self, messages: list[Any], state: dict[str, Any], **kwargs: Any
    ) -> list[Any]:
        session: TextSession = state["agentgym_session"]
        last = next((m for m in reversed(messages) if _role(m) == "assistant"), None)
        turn = await session.astep(last if last is not None else "")
        state["agentgym_last_info"] = turn.info
        reply = self._messages(turn.messages)
        if turn.done:
            state["final_env_response"] = reply
            await session.aclose()
        return reply

    @_cleanup
    async def close_agentgym_session(self, state: dict[str, Any], **kwargs: Any) -> None:
        """Close the rollout's env however the rollout ended (turn limit, error, done)."""
        session = state.get("agentgym_session")
        if session is not None:
            await session.aclose()  # close() is idempotent

    @staticmethod
    def _messages(messages: list[dict[str, Any]]) -> list[Any]:
        """The env's messages as verifiers message objects (what its loop expects)."""
        if _VF is None:
            return messages
        from verifiers.utils.message_utils import normalize_messages

        return list(normalize_messages(messages, field_name="env_response"))


def load_environment(
    env_id: str = "agentgym/Sokoban-Tiny-v0",
    num_examples: int = 64,
    seed: int = 0,
    max_turns: int = 20,
    *,
    env_kwargs: dict | None = None,
    answer_tool: bool | None = None,
    image_format: str = "data_url",
    **kwargs: Any,
) -> Any:
    """The verifiers entry point (``vf.load_environment`` convention)."""
    rows, tools = _openings(
        env_id, range(seed, seed + num_examples), env_kwargs, answer_tool, image_format
    )
    options: dict[str, Any] = {
        "env_kwargs": env_kwargs,
        "answer_tool": answer_tool,
        "image_format": image_format,
    }
    if _VF is None:
        env = AgentGymVerifiersEnv(env_id, **options)
        env.dataset = dataset_rows(rows)  # type: ignore[attr-defined]
        env.tool_defs = tool_defs(tools)  # type: ignore[attr-defined]
        return env
    from datasets import Dataset

    rubric = _VF.Rubric(funcs=[env_reward, success], weights=[1.0, 0.0])
    return AgentGymVerifiersEnv(
        env_id,
        **options,
        dataset=Dataset.from_list(dataset_rows(rows)),
        rubric=rubric,
        max_turns=max_turns,
        tool_defs=tool_defs(tools),
        **kwargs,
    )
