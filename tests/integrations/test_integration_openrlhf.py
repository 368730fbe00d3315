"""OpenRLHF 0.11: the agent classes driven by OpenRLHF's own ``MultiTurnAgentExecutor``.

No vLLM here: a stub engine answers ``generate(prompt_token_ids, sampling_params)`` the way
OpenRLHF's vLLM actor does (a ``RequestOutput``-shaped object whose token ids include the
sampled EOS when the model stopped by itself). The executor class is loaded from
``openrlhf.utils.agent`` (the vLLM engine module itself needs vllm).
"""

from __future__ import annotations

import asyncio
import types

import pytest

from agentgym.integrations.openrlhf import chatml, make_agent_classes, parse_label
from agentgym.parsing import render_tool_call

ENV_ID = "agentgym/Sokoban-Tiny-v0"
SEED = 0  # "up" then "left" solves it
MOVE = {d: render_tool_call("move", {"direction": d}) for d in ("up", "down", "left")}


def test_labels_name_the_episode():
    assert parse_label('{"seed": 4}') == (4, None)
    assert parse_label(7) == (7, None)
    assert parse_label("sokoban-5x5-b1-3") == (None, {"task_id": "sokoban-5x5-b1-3"})
    assert parse_label(None) == (None, None)


def test_chatml_closes_a_turn_once_and_leaves_images_out():
    msgs = [
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": "data:"}},
                {"type": "text", "text": "What is shown?"},
            ],
        }
    ]
    text = chatml(msgs, close_assistant=True, turn_closed=True)
    assert text.startswith("\n<|im_start|>user\nWhat is shown?\n[1 image(s) left out")
    assert "data:" not in text
    assert chatml(msgs, close_assistant=True).startswith("<|im_end|>\n<|im_start|>user")


class StubEngine:
    """OpenRLHF's vLLM actor surface: token ids in, one RequestOutput-like object out."""

    def __init__(self, tokenizer, turns):
        self.tokenizer = tokenizer
        self.turns = list(turns)  # (text, ended_by_eos)
        self.calls = 0

    async def generate(self, prompt_token_ids, sampling_params, multi_modal_data=None):
        text, eos = self.turns[min(self.calls, len(self.turns) - 1)]
        self.calls += 1
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        if eos:
            ids.append(self.tokenizer.eos_token_id)  # vLLM keeps the sampled EOS id
        out = types.SimpleNamespace(
            token_ids=ids,
            text=self.tokenizer.decode(ids[:-1] if eos else ids, skip_special_tokens=True),
            finish_reason="stop" if eos else "length",
            logprobs=[{t: types.SimpleNamespace(logprob=-0.5)} for t in ids],
        )
        return types.SimpleNamespace(outputs=[out])


@pytest.mark.slow
def test_multi_turn_executor_has_one_im_end_per_turn_boundary(monkeypatch):
    agent = pytest.importorskip("openrlhf.utils.agent")
    pytest.importorskip("transformers")
    from agentgym.integrations import session as session_mod
    from examples.integrations.offline import char_tokenizer

    closed = []
    real_make = session_mod.make_env

    def counting_make(env_id, **kwargs):
        env = real_make(env_id, **kwargs)
        real_close = env.close
        env.close = lambda: (closed.append(env), real_close())
        return env

    monkeypatch.setattr(session_mod, "make_env", counting_make)
    tok = char_tokenizer()  # like the project's TRL example: <tool_call> is a special token
    tok.add_special_tokens(
        {"additional_special_tokens": ["<|im_start|>", "<tool_call>", "</tool_call>"]}
    )
    instance_cls, Executor = make_agent_classes(ENV_ID)
    executor = Executor()
    assert isinstance(executor, agent.MultiTurnAgentExecutor)
    assert executor.agent_instance_cls is instance_cls
    # a wall bump ended by EOS, one cut by the length limit (no EOS), then the solution
    engine = StubEngine(
        tok, [(MOVE["down"], True), (MOVE["down"], False), (MOVE["up"], True), (MOVE["left"], True)]
    )
    params = types.SimpleNamespace(max_tokens=None, logprobs=1)
    out = asyncio.run(
        executor.execute(
            prompt="ignored",
            label='{"seed": 0}',
            sampling_params=params,
            max_length=4096,
            hf_tokenizer=tok,
            llm_engine=engine,
        )
    )
    ids = out["observation_tokens"]
    text = tok.decode(ids, skip_special_tokens=False)
    assert "<|im_end|><|im_end|>" not in text
    assert text.count("<|im_end|>") == text.count("<|im_start|>")  # every message closed once
    assert len(out["action_ranges"]) == 4 and text.endswith("</tool_call><|im_end|>")
    assert len(out["rollout_log_probs"]) == len(ids)
    # the tool calls reached the env intact: the episode was solved on the fourth turn
    assert out["extra_logs"]["success"].item() == 1.0
    assert out["reward"] > 1.0
    assert len(closed) == 1  # the env was closed when the episode ended


class BudgetEngine:
    """A malformed turn ended by EOS, then a turn that uses up the whole token budget."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.calls = 0

    async def generate(self, prompt_token_ids, sampling_params, multi_modal_data=None):
        self.calls += 1
        if self.calls == 1:
            ids = [*self.tokenizer.encode("no tool call", add_special_tokens=False)]
            ids.append(self.tokenizer.eos_token_id)
            reason = "stop"
        else:
            ids = self.tokenizer.encode("x", add_special_tokens=False) * sampling_params.max_tokens
            reason = "length"
        out = types.SimpleNamespace(token_ids=ids, text="", finish_reason=reason, logprobs=None)
        return types.SimpleNamespace(outputs=[out])


def _single_agent_ids():
    import agentgym

    return [r.id for r in agentgym.list_envs() if not r.multi_agent]


@pytest.mark.parametrize("env_id", _single_agent_ids())
def test_every_id_through_the_executor_is_text_with_closed_turns(env_id):
    pytest.importorskip("openrlhf.utils.agent")
    pytest.importorskip("transformers")
    from examples.integrations.offline import char_tokenizer

    tok = char_tokenizer()
    _, Executor = make_agent_classes(env_id)
    params = types.SimpleNamespace(max_tokens=None, logprobs=None)
    out = asyncio.run(
        Executor().execute(
            prompt="",
            label='{"seed": 1}',
            sampling_params=params,
            max_length=16384,
            hf_tokenizer=tok,
            llm_engine=BudgetEngine(tok),
        )
    )
    text = tok.decode(out["observation_tokens"], skip_special_tokens=False)
    assert len(out["action_ranges"]) == 2 and "base64" not in text
    assert "<|im_end|><|im_end|>" not in text
    # every message but the last (cut) turn is closed exactly once
    assert text.count("<|im_end|>") == text.count("<|im_start|>") - 1
