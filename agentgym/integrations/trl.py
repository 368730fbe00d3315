"""TRL: an ``environment_factory`` class for ``GRPOTrainer`` from any agentgym env.

TRL (>= 1.x, experimental) builds one environment object per rollout, calls
``reset(**dataset_row)`` (a returned string is appended to the prompt), exposes the
object's public methods to the model as tools (their JSON schemas come from the type hints
and Google-style docstrings), and, when the class has ``get_reward()``, scores the rollout
with it. :func:`environment_class` writes such a class for an env id: one typed method per
tool the env declares (parameters, enums and descriptions from the tool's JSON schema),
``reset`` reading ``seed`` / ``task_id`` from the row, and ``get_reward`` returning the
summed env reward.

TRL forwards only tool calls to the environment, so an env whose episode ends with an
``<answer>`` in text (CodeMath-*, Visual*) gets the ``answer`` tool (docs/contract.md) by
default: the model calls ``answer(answer=...)`` and the outcome reward is earned. The env's
own wording ("reply with <answer>...</answer>") would send a model that follows it to text
TRL never forwards (format reward only, and no hint why), so every text this class returns
asks for the tool instead (:func:`tool_only_text`). A model that answers in text anyway is
not lost silently: a rollout TRL scores before its episode ended is counted in the class's
``rollout_stats`` and warned about once, and :func:`forward_text_answers`, listed in
``reward_funcs``, hands such a final ``<answer>`` to the env and logs how often it did. Images:
with ``images=False`` (default, for text-only models) the task and tool results are text,
with a note where images were left out; with ``images=True`` (a vision-language model) they
are TRL's multimodal content parts with ``PIL`` images. Never base64 text.

TRL has no hook to close an environment object, and every public method would become a
tool, so the class has no ``close()``: each object releases its env (sandbox, browser tab)
through a ``weakref.finalize`` when it is garbage-collected (after the trainer is gone) or at
interpreter exit, and ``with Env() as env:`` releases it at the block's end.

Example::

    from trl import GRPOConfig, GRPOTrainer
    from agentgym.integrations.trl import environment_class, seed_dataset

    Sokoban = environment_class("agentgym/Sokoban-Tiny-v0")
    trainer = GRPOTrainer(model=..., args=GRPOConfig(...), train_dataset=seed_dataset(
        "agentgym/Sokoban-Tiny-v0", range(256)), environment_factory=Sokoban)
"""

from __future__ import annotations

import inspect
import keyword
import re
import typing
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentgym.error import InvalidConfigError
from agentgym.integrations.session import (
    TOOL_ONLY_ANSWER_NOTE,
    Message,
    TextSession,
    message_text,
    messages_text,
    release_with,
    tool_only_messages,
    tool_only_text,
)
from agentgym.parsing import render_answer, render_tool_call

__all__ = [
    "TEXT_ANSWER_METRIC",
    "TOOL_ONLY_ANSWER_NOTE",
    "RolloutStats",
    "environment_class",
    "forward_text_answers",
    "seed_dataset",
    "tool_only_text",
]

#: The metric :func:`forward_text_answers` logs: the share of scored rollouts whose final
#: text held an ``<answer>`` that TRL never forwarded (and the adapter then did).
TEXT_ANSWER_METRIC = "agentgym/text_answers"

_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


_JSON_TO_PY: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
}


def _annotation(schema: dict[str, Any]) -> Any:
    if schema.get("enum"):
        return typing.Literal[tuple(schema["enum"])]  # type: ignore[misc]
    kind = schema.get("type", "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "array" and isinstance(schema.get("items"), dict):
        return list[_annotation(schema["items"])]  # type: ignore[misc]
    return _JSON_TO_PY.get(kind, str)


def _tool_method(tool: dict[str, Any]) -> Any:
    fn = tool["function"]
    name = fn["name"]
    params = fn.get("parameters") or {}
    props: dict[str, Any] = params.get("properties", {})
    required = set(params.get("required", []))
    for arg in props:
        if not arg.isidentifier() or keyword.iskeyword(arg):
            raise InvalidConfigError(
                f"tool {name!r} has argument {arg!r}, which cannot be a Python parameter; "
                "TRL needs tools as methods."
            )

    def method(self: Any, **kwargs: Any) -> Any:
        return self._call_tool(name, kwargs)

    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    ordered = [a for a in props if a in required] + [a for a in props if a not in required]
    for arg in ordered:
        ann = _annotation(props[arg])
        annotations[arg] = ann
        default = inspect.Parameter.empty if arg in required else props[arg].get("default")
        parameters.append(
            inspect.Parameter(
                arg, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default, annotation=ann
            )
        )
    annotations["return"] = str
    method.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    method.__annotations__ = annotations
    method.__name__ = method.__qualname__ = name
    lines = [fn.get("description") or name, ""]
    if props:
        lines.append("Args:")
        for arg in ordered:
            desc = props[arg].get("description") or f"the {arg}"
            lines.append(f"    {arg}: {desc}")
        lines.append("")
    lines += ["Returns:", "    What the environment shows after the call."]
    method.__doc__ = "\n".join(lines)
    return method


def _content(messages: list[Message], images: bool) -> str | list[dict[str, Any]]:
    """Messages as one tool result / prompt addition: text, or TRL content parts."""
    if not images or all(isinstance(m.get("content"), str) for m in messages):
        return messages_text(messages)
    parts: list[dict[str, Any]] = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            if content:
                parts.append({"type": "text", "text": content + "\n\n"})
            continue
        parts.extend(p for p in content or [] if isinstance(p, dict))
    return parts


@dataclass
class RolloutStats:
    """What one environment class saw of TRL's rollouts (its ``rollout_stats`` attribute).

    ``unfinished`` counts rollouts TRL scored before their episode ended: the model stopped
    calling tools (an answer written as ``<answer>...</answer>`` text is never forwarded by
    TRL, so its outcome is lost) or a length or tool-call limit cut the rollout.
    ``text_answers`` counts the text answers :func:`forward_text_answers` forwarded.
    """

    scored: int = 0
    unfinished: int = 0
    text_answers: int = 0
    warned: bool = False


def _count_scored(env: Any) -> None:
    """Count a scored rollout; warn once per class when one had not ended."""
    stats: RolloutStats = type(env).rollout_stats
    stats.scored += 1
    if env._session.done:
        return
    stats.unfinished += 1
    if stats.warned:
        return
    stats.warned = True
    warnings.warn(
        f"{type(env).__name__} ({env.env_id}): TRL scored a rollout whose episode had not "
        "ended: the model stopped calling tools, or a length or tool-call limit cut it. TRL "
        "forwards only tool calls, so an answer written as <answer>...</answer> text never "
        "reaches the env and its outcome is lost; the prompt asks for the answer tool. "
        f"{type(env).__name__}.rollout_stats counts these rollouts; add "
        "agentgym.integrations.trl.forward_text_answers to reward_funcs to forward text "
        f"answers and log their share as {TEXT_ANSWER_METRIC!r}. (Warned once per class.)",
        RuntimeWarning,
        stacklevel=3,
    )


def _final_text(completion: Any) -> str:
    """The text of a TRL completion's last assistant message (or the completion string)."""
    if isinstance(completion, str):
        return completion
    messages = [m for m in completion or [] if isinstance(m, dict)]
    last = next((m for m in reversed(messages) if m.get("role", "assistant") == "assistant"), None)
    return message_text(last) if last is not None else ""


def forward_text_answers(
    completions: Sequence[Any],
    environments: Sequence[Any] | None = None,
    log_metric: Any = None,
    **kwargs: Any,
) -> list[float]:
    """TRL reward function: give the env an answer the model wrote as text in its last turn.

    TRL forwards only tool calls, so a final ``<answer>X</answer>`` in text never reaches an
    agentgym environment object. List this function in ``GRPOTrainer(reward_funcs=[...])``
    (before TRL appends the env's own ``get_reward``): for every rollout whose episode is
    still running and whose last assistant message holds an ``<answer>``, it steps the env
    with that answer (the last one), so the env's ``get_reward`` includes the outcome. It
    adds no reward itself (0.0 each) and logs the share of rollouts it forwarded as
    :data:`TEXT_ANSWER_METRIC` through TRL's ``log_metric``.
    """
    envs: list[Any] = list(environments) if environments is not None else [None] * len(completions)
    forwarded = 0
    for completion, env in zip(completions, envs):
        session = getattr(env, "_session", None)
        if session is None or session.done or not getattr(env, "answer_tool", False):
            continue
        answers = _ANSWER_TAG.findall(_final_text(completion))
        if not answers:
            continue
        session.step(render_answer(answers[-1]))
        type(env).rollout_stats.text_answers += 1
        forwarded += 1
    if log_metric is not None and completions:
        log_metric(TEXT_ANSWER_METRIC, forwarded / len(completions))
    return [0.0] * len(completions)


def environment_class(
    env_id: str,
    *,
    env_kwargs: dict[str, Any] | None = None,
    class_name: str | None = None,
    answer_tool: bool | None = None,
    images: bool = False,
) -> type:
    """A TRL environment class for ``env_id`` (see the module docstring).

    Args:
        env_id: A registered single-agent id.
        env_kwargs: Keyword arguments for ``gym.make``.
        class_name: The class name (TRL logs the env reward under it).
        answer_tool: Offer the ``answer`` tool; ``None`` (default) offers it exactly for envs
            that end with an ``<answer>``, which TRL could otherwise never receive.
        images: Pass images as content parts with PIL images (for a vision-language model);
            ``False`` gives text with a note where images were left out.
    """
    kwargs = dict(env_kwargs or {})
    image_format = "pil" if images else "none"
    probe = TextSession(env_id, env_kwargs=kwargs, answer_tool=answer_tool, image_format="none")
    try:
        tools = probe.reset(seed=0).tools
        offers_answer = bool(getattr(probe.env.unwrapped, "answer_tool", False))
    finally:
        probe.close()

    def __init__(self: Any) -> None:
        self._session = TextSession(
            env_id, env_kwargs=kwargs, answer_tool=offers_answer, image_format=image_format
        )
        # TRL never closes its environments (and a public close() would become a tool), so
        # the env is released when the object is collected or, at the latest, at exit.
        self._finalizer = release_with(self, self._session)

    def __enter__(self: Any) -> Any:
        return self

    def __exit__(self: Any, *exc: object) -> None:
        self._finalizer()

    def reset(self: Any, **row: Any) -> str | list[dict[str, Any]]:
        """Start the episode a dataset row names (``seed`` and/or ``task_id``).

        Returns the system prompt and the task (text, or content parts with images).
        """
        seed = row.get("seed")
        task_id = row.get("task_id")
        start = self._session.reset(
            seed=None if seed is None else int(seed),
            options={"task_id": task_id} if task_id else None,
        )
        return _content(self._reworded(start.messages), images)

    def _reworded(self: Any, messages: list[Message]) -> list[Message]:
        return tool_only_messages(messages) if offers_answer else messages

    def get_reward(self: Any) -> float:
        """The summed env reward of the episode so far (TRL calls it once per rollout)."""
        _count_scored(self)
        return float(self._session.total_reward)

    def _call_tool(self: Any, name: str, arguments: dict[str, Any]) -> Any:
        if self._session.done:
            raise ValueError("The episode has ended; no more tool calls are taken.")
        turn = self._session.step(render_tool_call(name, arguments))
        if not turn.info.get("action_valid", True):
            # TRL shows a raised error's message to the model as the tool result
            raise ValueError(messages_text(self._reworded(turn.messages)))
        return _content(self._reworded(turn.messages), images)

    namespace: dict[str, Any] = {
        "__init__": __init__,
        "__enter__": __enter__,
        "__exit__": __exit__,
        "reset": reset,
        "get_reward": get_reward,
        "_call_tool": _call_tool,
        "_reworded": _reworded,
        "env_id": env_id,
        "answer_tool": offers_answer,
        "images": images,
        "rollout_stats": RolloutStats(),
        "__doc__": f"TRL environment over agentgym env {env_id}.",
    }
    for tool in tools:
        name = tool["function"]["name"]
        if name in namespace or name.startswith("_"):
            raise InvalidConfigError(
                f"tool name {name!r} clashes with the environment's own methods."
            )
        namespace[name] = _tool_method(tool)
    default_name = "".join(ch for ch in env_id.split("/")[-1].title() if ch.isalnum()) + "Env"
    return type(class_name or default_name, (), namespace)


def seed_dataset(env_id: str, seeds: Sequence[int] | range, prompt: str | None = None) -> Any:
    """A ``datasets.Dataset`` of rows ``{"prompt": [...], "seed": s}`` for GRPOTrainer.

    The env's opening observation is appended to the prompt by ``reset``; ``prompt`` is the
    user message it is appended to (default: a one-line instruction).
    """
    from datasets import Dataset

    text = prompt or f"Solve the {env_id} task with the tools. The task follows.\n\n"
    return Dataset.from_list(
        [{"prompt": [{"role": "user", "content": text}], "seed": int(s)} for s in seeds]
    )
