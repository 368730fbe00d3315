"""The text-session core every framework adapter is built on.

RL frameworks do not speak Gymnasium: they hold a *chat* (a list of OpenAI-style messages)
and a list of tool schemas, send the model's turn, and get back the messages to append plus
a reward. :class:`TextSession` is exactly that view of any registered agentgym env:

* :meth:`TextSession.reset` -> :class:`SessionStart` (the opening ``messages``, the OpenAI
  ``tools``, the reset ``info``);
* :meth:`TextSession.step` takes the assistant turn either as plain text (tool calls written
  in the Hermes ``<tool_call>`` form, or an ``<answer>``) or as a structured OpenAI assistant
  message with ``tool_calls``, and returns a :class:`SessionTurn` (the NEW messages from the
  env, the reward, ``done`` and the step ``info``);
* :meth:`TextSession.areset` / :meth:`TextSession.astep` are the same calls for asyncio
  event loops (verl, SkyRL, verifiers run rollouts as coroutines): the env runs in a worker
  thread so a slow env never blocks the loop.

Images travel as the framework can take them (``image_format``): OpenAI ``image_url`` parts,
``PIL`` or array parts for local processors, or ``"none"``: plain-text content with a note
saying how many images were left out, for text-only models (never base64 as text).
:func:`message_text` gives any message's text the same way.

Envs that end with an ``<answer>`` can also offer an ``answer`` tool
(``answer_tool=True``, see docs/contract.md), so frameworks that forward only tool calls can
earn the outcome. Such a framework (TRL, an MCP host) never sends the model's text, so the
env's wording ("reply with ``<answer>...</answer>``") would send the model where its answer
is lost: :func:`tool_only_messages` rewords every text it shows to ask for the tool.

Assistant turns may be dicts or message objects (pydantic models such as verifiers'
``AssistantMessage``, whose tool calls are flat ``{id, name, arguments}``); both are read.

Structured tool calls are written back into the canonical text form before the env sees
them, so the env's own parser validates them and a malformed call earns the same error
message and format penalty as in text mode. The form is escaped
(:func:`agentgym.parsing.tool_call_block`): an argument that holds ``</tool_call>`` reaches
the env whole, never cut in two by its own content. When the turn came with structured calls, the
env's reply comes back as ``role="tool"`` messages (one per call, carrying its
``tool_call_id``; the env's single observation goes in the last one), otherwise as one
``role="user"`` message.

Examples:
    >>> import agentgym
    >>> s = TextSession("agentgym/Sokoban-Tiny-v0")
    >>> start = s.reset(seed=0)
    >>> [m["role"] for m in start.messages], start.tools[0]["function"]["name"]
    (['system', 'user'], 'move')
    >>> turn = s.step({"role": "assistant", "content": "", "tool_calls": [
    ...     {"id": "c1", "type": "function",
    ...      "function": {"name": "move", "arguments": '{"direction": "up"}'}}]})
    >>> turn.messages[0]["role"], turn.messages[0]["tool_call_id"], turn.info["action_valid"]
    ('tool', 'c1', True)
    >>> s.close()
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
from gymnasium.wrappers import PassiveEnvChecker

from agentgym.error import InvalidConfigError
from agentgym.parsing import tool_call_block
from agentgym.text import safe_text
from agentgym.wrappers.chat import IMAGE_FORMATS, IMAGES_LEFT_OUT_NOTE, observation_message

Message = dict[str, Any]
AssistantTurn = str | Mapping[str, Any]
"""Plain text, or an OpenAI assistant message ``{"content": ..., "tool_calls": [...]}``."""

__all__ = [
    "TOOL_ONLY_ANSWER_NOTE",
    "AssistantTurn",
    "SessionStart",
    "SessionTurn",
    "TextSession",
    "assistant_text",
    "make_env",
    "message_text",
    "messages_text",
    "release_with",
    "takes_answer_tool",
    "tool_only_messages",
    "tool_only_text",
]


def _utf8_observation(obs: Any) -> Any:
    """``obs`` with lone surrogates in its text replaced (:func:`agentgym.text.safe_text`).

    Every framework adapter sends observation text to a tokenizer or over the wire, where a
    lone surrogate (a model's half emoji echoed by an env) cannot be encoded.
    """
    if isinstance(obs, Mapping) and isinstance(obs.get("text"), str):
        text = safe_text(obs["text"])
        if text is not obs["text"]:
            return {**obs, "text": text}
    return obs


def _close_quietly(session: TextSession) -> None:
    with contextlib.suppress(Exception):  # at collection or exit, a failed close is moot
        session.close()


def release_with(owner: object, session: TextSession) -> weakref.finalize:
    """Close ``session`` when ``owner`` is garbage-collected, or at interpreter exit.

    For adapters whose framework never closes what it built (TRL's environment objects,
    GEM's vector envs): the env behind the session (a sandbox, a browser tab) is released
    once nothing refers to the owner any more. Calling the returned finalizer closes it now
    (once; later calls do nothing).
    """
    return weakref.finalize(owner, _close_quietly, session)


def _unchecked_resets(env: gym.Env) -> list[Any]:
    """gymnasium's passive env checkers in ``env``'s wrapper chain that have not seen a reset.

    Such a checker marks its first reset checked before running it; when that reset raises
    (a mistyped task id), it keeps no reset data, and the episode's first step then fails
    inside the checker (``TypeError: cannot unpack non-iterable NoneType``) however many
    good resets came between: the session was unusable. :meth:`TextSession.reset` hands
    these checkers their first reset back when it raised.
    """
    out = []
    layer: Any = env
    while isinstance(layer, gym.Wrapper):
        if isinstance(layer, PassiveEnvChecker) and not layer.checked_reset:
            out.append(layer)
        layer = layer.env
    return out


def make_env(env_id: str, **kwargs: Any) -> gym.Env:
    """Build a registered single-agent env by id (``agentgym`` imported so ids resolve)."""
    import agentgym  # noqa: F401  (registers every family)
    from agentgym.registry import get_record

    record = get_record(env_id)
    if record.multi_agent:
        raise InvalidConfigError(
            f"{record.id} is a multi-agent env; a text session drives one seat. "
            "Wrap one seat with agentgym.wrappers.seats.SeatAsEnv and pass the env object."
        )
    return gym.make(record.id, **kwargs)


def takes_answer_tool(env_id: str) -> bool:
    """Whether the env of ``env_id`` ends with an ``<answer>`` (so it takes ``answer_tool``)."""
    import agentgym  # noqa: F401
    from agentgym.registry import get_record

    return bool(getattr(get_record(env_id).load(), "answers_in_text", False))


TOOL_ONLY_ANSWER_NOTE = (
    "Only tool calls reach the environment here: give the final answer by calling the "
    '`answer` tool, answer(answer="..."), which ends the episode. Text outside a tool call '
    "is not read."
)
"""What replaces the env's "you may also call the answer tool" line on tool-only paths."""

_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def tool_only_text(text: str) -> str:
    """Env text reworded for a client that forwards only tool calls (TRL, MCP hosts).

    The answer-tool note (:data:`agentgym.parsing.ANSWER_TOOL_NOTE`) becomes
    :data:`TOOL_ONLY_ANSWER_NOTE` and every ``<answer>X</answer>`` the env shows as the way
    to answer becomes the call ``answer(answer="X")``.

    Example:
        >>> tool_only_text("Then reply with <answer>...</answer>, e.g. <answer>12</answer>.")
        'Then reply with answer(answer="..."), e.g. answer(answer="12").'
    """
    from agentgym.parsing import ANSWER_TOOL_NOTE

    text = text.replace(ANSWER_TOOL_NOTE, TOOL_ONLY_ANSWER_NOTE)
    return _ANSWER_TAG.sub(lambda m: f'answer(answer="{m.group(1)}")', text)


def tool_only_messages(messages: Sequence[Message]) -> list[Message]:
    """``messages`` with every text (string content or text parts) reworded by
    :func:`tool_only_text`; images and other parts unchanged. New dicts; the input is kept."""
    out: list[Message] = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            m = {**m, "content": tool_only_text(content)}
        elif isinstance(content, list):
            parts = [
                {**p, "text": tool_only_text(p["text"])}
                if isinstance(p, Mapping) and isinstance(p.get("text"), str)
                else p
                for p in content
            ]
            m = {**m, "content": parts}
        out.append(m)
    return out


def _plain(obj: Any) -> Any:
    """Message objects (pydantic models, e.g. verifiers' messages) as plain dicts/lists."""
    if isinstance(obj, str | bytes | int | float | bool) or obj is None:
        return obj
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        with contextlib.suppress(Exception):
            return _plain(dump(exclude_none=True))
    if isinstance(obj, Mapping):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_plain(v) for v in obj]
    return obj


def message_text(message: Any) -> str:
    """The text of a chat message: content parts' text joined, images replaced by a note.

    Never returns base64 image data; a message object is read like a dict.
    """
    msg = _plain(message)
    content = msg.get("content") if isinstance(msg, Mapping) else msg
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return str(content)
    texts: list[str] = []
    images = 0
    for part in content:
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text":
            texts.append(str(part.get("text", "")))
        elif kind in ("image_url", "image", "input_image"):
            images += 1
        elif isinstance(part, str):
            texts.append(part)
    if images:
        texts.append(IMAGES_LEFT_OUT_NOTE.format(n=images))
    return "\n".join(t for t in texts if t)


def messages_text(messages: Sequence[Any], sep: str = "\n\n") -> str:
    """:func:`message_text` of each message, joined (system prompt and task, say)."""
    return sep.join(t for t in (message_text(m) for m in messages) if t)


def _call_text(call: Any) -> str:
    """One OpenAI tool call (any validity) as canonical ``<tool_call>`` text.

    Accepts the OpenAI nesting ``{"id", "type", "function": {"name", "arguments"}}`` and the
    flat ``{"id", "name", "arguments"}`` form (verifiers' ``ToolCall``).
    """
    call = _plain(call)
    fn = call.get("function", call) if isinstance(call, Mapping) else call
    if not isinstance(fn, Mapping):
        return tool_call_block(json.dumps(fn, default=str))
    args = fn.get("arguments", {})
    if isinstance(args, str):
        # an undecodable string stays a string: the parser reports it with its own message
        with contextlib.suppress(ValueError):
            args = json.loads(args) if args.strip() else {}
    payload = {"name": fn.get("name"), "arguments": args}
    # escaped so that an argument holding "</tool_call>" cannot end the block early
    return tool_call_block(json.dumps(payload, ensure_ascii=False, default=str))


def assistant_text(turn: AssistantTurn) -> str:
    """The env action string for an assistant turn given as text or as an OpenAI message.

    Structured ``tool_calls`` are appended to the message content in the canonical text
    form, whether they are valid or not, so the env's parser judges them.
    """
    if isinstance(turn, str):
        return turn
    turn = _plain(turn)
    if not isinstance(turn, Mapping):
        return repr(turn)
    content = turn.get("content") or ""
    if isinstance(content, list):  # content parts
        content = "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    parts = [str(content)] if content else []
    parts.extend(_call_text(c) for c in _tool_calls(turn))
    return "\n".join(parts)


def _tool_calls(turn: Mapping[str, Any]) -> list[Any]:
    """The turn's ``tool_calls`` as a list, whatever a client sent (a lone object, a number)."""
    calls = turn.get("tool_calls") or []
    return list(calls) if isinstance(calls, list | tuple) else [calls]


@dataclass
class SessionStart:
    """What a session opens with."""

    messages: list[Message]
    tools: list[dict[str, Any]]
    info: dict[str, Any]


@dataclass
class SessionTurn:
    """The env's answer to one assistant turn."""

    messages: list[Message]
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated


class TextSession:
    """One env as a chat session; see the module docstring.

    Args:
        env: A registered env id, or an env object (e.g. a wrapped one, or one seat of a
            multi-agent env through ``SeatAsEnv``).
        env_kwargs: Keyword arguments for ``gym.make`` when ``env`` is an id.
        image_format: How observation images travel: ``"data_url"`` (OpenAI ``image_url``
            parts), ``"array"`` / ``"pil"`` (``{"type": "image", "image": ...}`` parts for
            local processors), or ``"none"`` (text content with a note that images were left
            out, for text-only models).
        feedback_role: ``"auto"`` (``tool`` after structured calls, else ``user``),
            ``"user"`` or ``"tool"``.
        answer_tool: Offer the ``answer`` tool next to ``<answer>`` text (docs/contract.md).
            ``False`` (default) leaves the env as built; ``True`` requires an env that ends
            with an ``<answer>``; ``None`` turns it on exactly for such envs.
    """

    def __init__(
        self,
        env: str | gym.Env,
        *,
        env_kwargs: Mapping[str, Any] | None = None,
        image_format: str = "data_url",
        feedback_role: str = "auto",
        answer_tool: bool | None = False,
    ):
        if feedback_role not in ("auto", "user", "tool"):
            raise InvalidConfigError(
                f"feedback_role must be 'auto', 'user' or 'tool', got {feedback_role!r}."
            )
        if image_format not in IMAGE_FORMATS:
            raise InvalidConfigError(
                f"image_format must be one of {IMAGE_FORMATS}, got {image_format!r}."
            )
        self.env_id = env if isinstance(env, str) else getattr(env.spec, "id", type(env).__name__)
        kwargs = dict(env_kwargs or {})
        if isinstance(env, str):
            if answer_tool is None:
                answer_tool = takes_answer_tool(env)
            if answer_tool and not takes_answer_tool(env):
                raise InvalidConfigError(
                    f"answer_tool=True needs an env that ends with an <answer>; {env} does not "
                    "(its own tools end the episode). Use answer_tool=None to offer it only "
                    "where it applies."
                )
            if answer_tool:
                kwargs["answer_tool"] = True
            self.env: gym.Env = make_env(env, **kwargs)
        else:
            self.env = env
            core = env.unwrapped
            wanted = getattr(core, "answers_in_text", False) if answer_tool is None else answer_tool
            if wanted and not getattr(core, "answers_in_text", False):
                raise InvalidConfigError(
                    f"answer_tool=True needs an env that ends with an <answer>; "
                    f"{type(core).__name__} does not."
                )
            if wanted:
                core.answer_tool = True  # type: ignore[attr-defined]  # read at the next reset
        self.image_format = image_format
        self.feedback_role = feedback_role
        self.messages: list[Message] = []
        self.tools: list[dict[str, Any]] = []
        self.info: dict[str, Any] = {}
        self.total_reward = 0.0
        self.turns = 0
        self.done = False
        self.closed = False
        self._started = False

    # ---- sync API ---------------------------------------------------------------------------

    def reset(
        self, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> SessionStart:
        """Start an episode; ``options={"task_id": ...}`` picks the task.

        A reset that raises (an unknown task id) leaves the session as it was: it can be
        reset again (see :func:`_unchecked_resets`).
        """
        unchecked = _unchecked_resets(self.env)
        try:
            obs, info = self.env.reset(seed=seed, options=dict(options) if options else None)
        except BaseException:
            for checker in unchecked:  # its check never finished: run it at the next reset
                checker.checked_reset = False
            raise
        obs = _utf8_observation(obs)
        self.messages = []
        if info.get("system_prompt"):
            self.messages.append({"role": "system", "content": info["system_prompt"]})
        self.messages.append(observation_message(obs, "user", self.image_format))
        self.tools = list(info.get("tools", []))
        self.info = dict(info)
        self.total_reward = 0.0
        self.turns = 0
        self.done = False
        self._started = True
        return SessionStart(list(self.messages), list(self.tools), dict(info))

    def step(self, turn: AssistantTurn) -> SessionTurn:
        """Apply one assistant turn; returns the env's new messages, reward and flags."""
        if not self._started:
            raise gym.error.ResetNeeded("Call reset() before step().")
        action = assistant_text(turn)
        obs, reward, terminated, truncated, info = self.env.step(action)
        obs = _utf8_observation(obs)
        self.messages.append(self._assistant_message(turn))
        new = self._feedback(obs, turn)
        self.messages.extend(new)
        self.info = {**self.info, **info}
        self.total_reward += float(reward)
        self.turns += 1
        self.done = bool(terminated or truncated)
        return SessionTurn(new, float(reward), bool(terminated), bool(truncated), dict(info))

    def close(self) -> None:
        """Close the env (its sandbox, browser tab...). Idempotent; sets :attr:`closed`."""
        if not self.closed:
            self.closed = True
            self.env.close()

    # ---- async API --------------------------------------------------------------------------

    async def areset(
        self, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> SessionStart:
        """:meth:`reset` in a worker thread."""
        return await asyncio.to_thread(self.reset, seed, options)

    async def astep(self, turn: AssistantTurn) -> SessionTurn:
        """:meth:`step` in a worker thread."""
        return await asyncio.to_thread(self.step, turn)

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    # ---- helpers ----------------------------------------------------------------------------

    @property
    def success(self) -> bool:
        return bool(self.info.get("success", False))

    def _assistant_message(self, turn: AssistantTurn) -> Message:
        if not isinstance(turn, str):
            turn = _plain(turn)
        if isinstance(turn, Mapping):
            msg: Message = {"role": "assistant", "content": turn.get("content") or ""}
            if turn.get("tool_calls"):
                msg["tool_calls"] = _tool_calls(turn)
            return msg
        return {"role": "assistant", "content": turn if isinstance(turn, str) else repr(turn)}

    def _feedback(self, obs: dict[str, Any], turn: AssistantTurn) -> list[Message]:
        if not isinstance(turn, str):
            turn = _plain(turn)
        calls: Sequence[Any] = _tool_calls(turn) if isinstance(turn, Mapping) else []
        role = self.feedback_role
        if role == "auto":
            role = "tool" if calls else "user"
        if role == "user" or not calls:
            return [observation_message(obs, "user" if role == "user" else role, self.image_format)]
        out: list[Message] = []
        for i, call in enumerate(calls):
            call_id = call.get("id", "") if isinstance(call, Mapping) else ""
            if i < len(calls) - 1:
                msg: Message = {"role": "tool", "content": "(see the last tool message)"}
            else:
                msg = observation_message(obs, "tool", self.image_format)
            msg["tool_call_id"] = call_id
            out.append(msg)
        return out


SessionFactory = Callable[[], TextSession]
