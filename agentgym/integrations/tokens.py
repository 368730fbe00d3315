"""Token-level multi-turn episodes: what trainers that work on token ids need.

verl, OpenRLHF and SkyRL train on ONE token sequence per episode: the prompt, then the
model's turns interleaved with the env's replies. Only model tokens are trained on, so the
sequence comes with a mask (1 for sampled tokens, 0 for env tokens) and the sampled tokens'
logprobs. :func:`run_token_episode` plays one episode of a :class:`TextSession` against any
async ``generate(token_ids) -> (new_ids, logprobs)`` and returns exactly that.

Env replies are tokenised with the model's chat template as the *difference* between a
conversation with and without them, so they carry the template's role markers and end with
the generation prompt for the next assistant turn. Sampled tokens are kept verbatim (never
re-tokenised), which keeps logprobs aligned with what the sampler produced.

A turn's text is decoded with the tokenizer's special tokens KEPT (:func:`decode_turn`): a
model whose tokenizer makes ``<tool_call>`` a special token (Qwen-style tool tokens, or a
tokenizer extended for training) would otherwise lose its tool-call tags, and every turn
would reach the env as invalid. Only the end-of-turn tokens that close the turn are dropped.

Text-only chat templates render ``image_url`` parts as nothing (or as the part list's
``str()``); :func:`text_only_messages` turns them into the task's text plus a plain note
that images were left out, so a text model still reads the task and never base64.
"""

from __future__ import annotations

import contextlib
import json
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentgym.integrations.session import Message, TextSession, message_text

Generate = Callable[[list[int]], Awaitable[tuple[Sequence[int], Sequence[float] | None]]]
"""``await generate(context_ids) -> (new_token_ids, their_logprobs or None)``."""

__all__ = [
    "ChatTokenizer",
    "Generate",
    "TokenEpisode",
    "answer_tool_option",
    "chat_ids",
    "decode_turn",
    "end_of_turn_ids",
    "env_reply_ids",
    "run_token_episode",
    "text_only_messages",
    "with_tools_in_system",
]

# tokens that close an assistant turn in the common chat formats (ChatML/Qwen, Llama 3,
# Gemma, Phi, Mistral); only the ones the tokenizer knows as single tokens are used
_END_OF_TURN = (
    "<|im_end|>",
    "<|endoftext|>",
    "<|eot_id|>",
    "<|end_of_text|>",
    "<end_of_turn>",
    "<|end|>",
    "</s>",
)


# a neutral exchange the env reply is appended to, to read off the reply's own tokens
_BASE: list[Message] = [
    {"role": "user", "content": "."},
    {"role": "assistant", "content": "."},
]


_EOT_CACHE: weakref.WeakKeyDictionary[Any, frozenset[int]] = weakref.WeakKeyDictionary()


def end_of_turn_ids(tokenizer: Any) -> frozenset[int]:
    """Ids that end a sampled turn: the EOS token and the known end-of-turn tokens.

    Computed once per tokenizer object (reading a large vocabulary costs milliseconds).
    """
    try:
        return _EOT_CACHE[tokenizer]
    except (KeyError, TypeError):
        pass
    ids: set[int] = set()
    eos = getattr(tokenizer, "eos_token_id", None)
    if isinstance(eos, int):
        ids.add(eos)
    elif isinstance(eos, list | tuple):
        ids.update(int(t) for t in eos)
    vocab = tokenizer.get_vocab() if hasattr(tokenizer, "get_vocab") else {}
    ids.update(int(vocab[t]) for t in _END_OF_TURN if t in vocab)
    found = frozenset(ids)
    with contextlib.suppress(TypeError):  # objects that take no weak reference: not cached
        _EOT_CACHE[tokenizer] = found
    return found


def decode_turn(tokenizer: Any, token_ids: Sequence[int]) -> str:
    """The text of one sampled turn: trailing end-of-turn tokens dropped, every other
    special token kept (``<tool_call>`` may be one; see the module docstring)."""
    ids = [int(t) for t in token_ids]
    stop = end_of_turn_ids(tokenizer)
    while ids and ids[-1] in stop:
        ids.pop()
    return str(tokenizer.decode(ids, skip_special_tokens=False))


def answer_tool_option(value: Any) -> bool | None:
    """A row's or config's ``answer_tool`` as ``TextSession`` takes it: absent/empty ->
    ``False`` (the env as built), ``"auto"`` -> ``None`` (on exactly for envs that end
    with an ``<answer>``), anything else -> its truth value (a missing parquet value, NaN,
    counts as absent)."""
    if value is None or value == "" or (isinstance(value, float) and value != value):
        return False
    if isinstance(value, str):
        if value.lower() == "auto":
            return None
        return value.lower() in ("1", "true", "yes", "on")
    return bool(value)


def text_only_messages(messages: Sequence[Message]) -> list[Message]:
    """Messages whose content is plain text: text parts joined, images replaced by a note
    (:func:`agentgym.integrations.session.message_text`).

    Messages without content parts are returned unchanged (the same objects).
    """
    return [
        {**m, "content": message_text(m)} if isinstance(m.get("content"), list) else m
        for m in messages
    ]


def with_tools_in_system(
    messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]
) -> list[Message]:
    """Messages whose system prompt lists the tools' JSON schemas, for trainers whose
    generator applies the chat template WITHOUT ``tools=`` (SkyRL's does), so the model
    still reads every tool's name, description and parameters.

    The block goes at the end of the first system message (one is added if there is none),
    one schema per line between ``<tools>`` tags, as Hermes/Qwen templates write it.
    """
    if not tools:
        return list(messages)
    block = (
        "You may call the following tools; their JSON schemas:\n<tools>\n"
        + "\n".join(json.dumps(t, ensure_ascii=False) for t in tools)
        + "\n</tools>\n"
        + 'Call one by writing <tool_call>{"name": ..., "arguments": {...}}</tool_call>.'
    )
    out = [dict(m) for m in messages]
    if out and out[0].get("role") == "system":
        first = text_only_messages(out[:1])[0]
        out[0] = {**first, "content": f"{first.get('content') or ''}\n\n{block}".lstrip()}
    else:
        out.insert(0, {"role": "system", "content": block})
    return out


class ChatTokenizer(Protocol):
    """The part of a Hugging Face tokenizer this module uses."""

    def apply_chat_template(self, conversation: Any, **kwargs: Any) -> Any: ...

    def decode(self, token_ids: Any, **kwargs: Any) -> str: ...


def chat_ids(
    tokenizer: ChatTokenizer,
    messages: Sequence[Message],
    tools: Sequence[Mapping[str, Any]] | None = None,
    *,
    add_generation_prompt: bool,
) -> list[int]:
    """Token ids of a chat under the tokenizer's chat template."""
    out = tokenizer.apply_chat_template(
        list(messages),
        tools=list(tools) if tools else None,
        add_generation_prompt=add_generation_prompt,
        tokenize=True,
    )
    if isinstance(out, Mapping):  # transformers 5 may return a BatchEncoding
        out = out["input_ids"]
    if hasattr(out, "tolist"):
        out = out.tolist()
    if out and isinstance(out[0], list):
        out = out[0]
    return [int(t) for t in out]


def env_reply_ids(tokenizer: ChatTokenizer, messages: Sequence[Message]) -> list[int]:
    """Tokens of env reply messages, up to and including the next generation prompt."""
    base = chat_ids(tokenizer, _BASE, add_generation_prompt=False)
    full = chat_ids(tokenizer, [*_BASE, *messages], add_generation_prompt=True)
    if full[: len(base)] != base:  # a template that rewrites earlier turns: no clean delta
        return chat_ids(tokenizer, list(messages), add_generation_prompt=True)
    return full[len(base) :]


@dataclass
class TokenEpisode:
    """One episode as one token sequence, plus what happened."""

    prompt_ids: list[int]
    response_ids: list[int]
    response_mask: list[int]
    response_logprobs: list[float] | None
    reward_score: float
    turn_rewards: list[float]
    num_turns: int
    success: bool
    truncated_by_length: bool
    info: dict[str, Any] = field(default_factory=dict)
    messages: list[Message] = field(default_factory=list)


async def run_token_episode(
    session: TextSession,
    generate: Generate,
    tokenizer: ChatTokenizer,
    *,
    seed: int | None = None,
    options: Mapping[str, Any] | None = None,
    max_turns: int | None = None,
    response_length: int | None = None,
    text_only: bool = True,
) -> TokenEpisode:
    """Play one episode; env tokens get mask 0 and logprob 0.0.

    Stops when the env ends the episode, after ``max_turns`` model turns, or when the
    response would pass ``response_length`` tokens (then cut to that length).
    ``reward_score`` is the sum of the env's step rewards; ``num_turns`` counts the chat's
    messages other than the system prompt (task, model turns, env replies), as verl does.
    With ``text_only`` (the default; token-level trainers here tokenise with a text chat
    template) image parts are replaced by a note, see :func:`text_only_messages`.
    """
    render = text_only_messages if text_only else list
    start = await session.areset(seed, options)
    prompt_ids = chat_ids(
        tokenizer, render(start.messages), start.tools, add_generation_prompt=True
    )
    response_ids: list[int] = []
    mask: list[int] = []
    logprobs: list[float] = []
    have_logprobs = True
    rewards: list[float] = []
    info: dict[str, Any] = dict(start.info)
    turns = 0
    cut = False
    while max_turns is None or turns < max_turns:
        if response_length is not None and len(response_ids) >= response_length:
            cut = True
            break
        new_ids, new_lps = await generate(prompt_ids + response_ids)
        new_ids = [int(t) for t in new_ids]
        response_ids += new_ids
        mask += [1] * len(new_ids)
        if new_lps is None:
            have_logprobs = False
            logprobs += [0.0] * len(new_ids)
        else:
            logprobs += [float(x) for x in new_lps]
        turn = await session.astep(decode_turn(tokenizer, new_ids))
        turns += 1
        rewards.append(turn.reward)
        info.update(turn.info)
        if turn.done:
            break
        reply = env_reply_ids(tokenizer, render(turn.messages))
        response_ids += reply
        mask += [0] * len(reply)
        logprobs += [0.0] * len(reply)
    if response_length is not None and len(response_ids) > response_length:
        cut = True
        response_ids, mask = response_ids[:response_length], mask[:response_length]
        logprobs = logprobs[:response_length]
    return TokenEpisode(
        prompt_ids=prompt_ids,
        response_ids=response_ids,
        response_mask=mask,
        response_logprobs=logprobs if have_logprobs else None,
        reward_score=float(sum(rewards)),
        turn_rewards=rewards,
        num_turns=sum(1 for m in session.messages if m.get("role") != "system"),
        success=session.success,
        truncated_by_length=cut,
        info=info,
        messages=list(session.messages),
    )
