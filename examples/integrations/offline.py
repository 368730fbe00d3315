"""Stand-ins for a model, so integration examples and tests run offline on a CPU.

A test harness, kept out of the installed package (it was ``agentgym.integrations.offline``):
the examples beside it import it as ``offline`` (their folder is on ``sys.path``), the tests
as ``examples.integrations.offline`` (the repository root is).

* :func:`char_tokenizer` — a Hugging Face fast tokenizer built in memory (one token per
  byte, a ChatML chat template with tools), no download. Real runs use the model's own.
* :class:`ScriptedLLM` — an async ``generate(token_ids)`` that answers every turn with an
  action from a script (a fixed list, cycled), token ids and logprobs included. It plays the
  role of the inference server (vLLM / SGLang) that a trainer would call.

Neither is a policy worth training; they exercise the plumbing with real token ids.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from typing import Any

from agentgym.error import DependencyMissingError

CHATML_TEMPLATE = (
    "{% if tools %}<|im_start|>system\n"
    "{% if messages[0]['role'] == 'system' %}{{ messages[0]['content'] }}\n\n{% endif %}"
    "Tools:{% for tool in tools %}\n{{ tool | tojson }}{% endfor %}<|im_end|>\n"
    "{% elif messages[0]['role'] == 'system' %}"
    "<|im_start|>system\n{{ messages[0]['content'] }}<|im_end|>\n{% endif %}"
    "{% for m in messages %}{% if not (loop.first and m['role'] == 'system') %}"
    "<|im_start|>{{ m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}"
    "{% else %}{% for p in m['content'] %}{% if p['type'] == 'text' %}{{ p['text'] }}"
    "{% endif %}{% endfor %}{% endif %}"
    "{% if m.get('tool_calls') %}{% for c in m['tool_calls'] %}\n<tool_call>"
    '{"name": "{{ c["function"]["name"] }}", "arguments": {{ c["function"]["arguments"] }}}'
    "</tool_call>{% endfor %}{% endif %}<|im_end|>\n"
    "{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

SPECIAL_TOKENS = ("<|im_start|>", "<|im_end|>", "<|endoftext|>")


def char_tokenizer() -> Any:
    """A byte-level tokenizer with a ChatML template, built without any download."""
    try:
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers
        from transformers import PreTrainedTokenizerFast
    except ImportError as exc:
        raise DependencyMissingError("transformers/tokenizers", "pip install transformers") from exc
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {ch: i for i, ch in enumerate(sorted(alphabet))}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    hf = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
    )
    hf.chat_template = CHATML_TEMPLATE
    return hf


class ScriptedLLM:
    """An async stand-in for an inference server: ``await llm(ids) -> (ids, logprobs)``.

    Args:
        tokenizer: The tokenizer whose ids to emit (e.g. :func:`char_tokenizer`).
        actions: Turn texts to answer with, in order, cycled.
        end_token: Appended to every turn (the model's end-of-turn token).
    """

    def __init__(self, tokenizer: Any, actions: Iterable[str], end_token: str = "<|im_end|>"):
        self.tokenizer = tokenizer
        self._actions = itertools.cycle(list(actions))
        self.end_id = tokenizer.convert_tokens_to_ids(end_token)
        self.calls = 0
        self.contexts: list[int] = []

    def next_text(self) -> str:
        return next(self._actions)

    async def __call__(self, context_ids: Sequence[int]) -> tuple[list[int], list[float]]:
        self.calls += 1
        self.contexts.append(len(context_ids))
        ids = list(self.tokenizer.encode(self.next_text(), add_special_tokens=False))
        ids.append(self.end_id)
        return ids, [math.log(0.5)] * len(ids)
