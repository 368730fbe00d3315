"""Token-level episodes: env tokens masked, logprobs aligned, lengths respected."""

from __future__ import annotations

import asyncio

import pytest

from agentgym.integrations.session import TextSession
from agentgym.integrations.tokens import run_token_episode
from agentgym.parsing import render_tool_call

pytest.importorskip("transformers")
from examples.integrations.offline import ScriptedLLM, char_tokenizer

ENV_ID = "agentgym/Sokoban-Tiny-v0"
MOVES = [render_tool_call("move", {"direction": d}) for d in ("up", "left", "down", "right")]


@pytest.fixture(scope="module")
def tok():
    return char_tokenizer()


def test_mask_marks_exactly_the_sampled_tokens(tok):
    llm = ScriptedLLM(tok, ["no tool call here", *MOVES])
    ep = asyncio.run(run_token_episode(TextSession(ENV_ID), llm, tok, seed=5, max_turns=4))
    assert len(ep.response_ids) == len(ep.response_mask) == len(ep.response_logprobs)
    sampled = [t for t, m in zip(ep.response_ids, ep.response_mask) if m == 1]
    env = [t for t, m in zip(ep.response_ids, ep.response_mask) if m == 0]
    assert tok.decode(sampled).startswith("no tool call here")
    assert "move" in tok.decode(sampled) and "<|im_start|>user" in tok.decode(env)
    assert all(lp == 0.0 for lp, m in zip(ep.response_logprobs, ep.response_mask) if m == 0)
    assert all(lp < 0 for lp, m in zip(ep.response_logprobs, ep.response_mask) if m == 1)
    # the model saw exactly the prompt plus the response so far at every turn
    assert llm.contexts[0] == len(ep.prompt_ids)
    assert len(ep.turn_rewards) == llm.calls and ep.reward_score == pytest.approx(
        sum(ep.turn_rewards)
    )
    assert ep.turn_rewards[0] < 0  # the invalid first turn was penalised


def test_response_length_cuts_the_episode(tok):
    llm = ScriptedLLM(tok, MOVES[:2])
    ep = asyncio.run(run_token_episode(TextSession(ENV_ID), llm, tok, seed=3, response_length=100))
    assert len(ep.response_ids) == 100 and ep.truncated_by_length


def test_prompt_carries_the_tools(tok):
    llm = ScriptedLLM(tok, MOVES)
    ep = asyncio.run(run_token_episode(TextSession(ENV_ID), llm, tok, seed=3, max_turns=1))
    assert '"name": "move"' in tok.decode(ep.prompt_ids)


def test_special_tool_tokens_survive_decoding():
    from agentgym.integrations.tokens import decode_turn

    tok = char_tokenizer()
    tok.add_special_tokens(
        {"additional_special_tokens": ["<|im_start|>", "<tool_call>", "</tool_call>"]}
    )
    ids = [*tok.encode(MOVES[0], add_special_tokens=False), tok.eos_token_id]
    assert decode_turn(tok, ids) == MOVES[0]  # tags kept, the closing EOS dropped
    llm = ScriptedLLM(tok, MOVES)
    ep = asyncio.run(run_token_episode(TextSession(ENV_ID), llm, tok, seed=5, max_turns=2))
    assert ep.info["action_valid"] and ep.turn_rewards[0] > -0.5


def test_visual_prompt_is_text_with_an_images_left_out_note(tok):
    llm = ScriptedLLM(tok, ["<answer>1</answer>"])
    session = TextSession("agentgym/VisualChart-v0")
    ep = asyncio.run(run_token_episode(session, llm, tok, seed=0, max_turns=1))
    prompt = tok.decode(ep.prompt_ids)
    question = session.messages[1]["content"][-1]["text"]  # the env's own task text
    assert question in prompt and "image(s) left out" in prompt and "base64" not in prompt


def _single_agent_ids():
    import agentgym

    return [r.id for r in agentgym.list_envs() if not r.multi_agent]


@pytest.fixture(scope="module")
def special_tok():
    tok = char_tokenizer()  # as the project's TRL example registers it: tool tags special
    tok.add_special_tokens(
        {"additional_special_tokens": ["<|im_start|>", "<tool_call>", "</tool_call>"]}
    )
    return tok


@pytest.mark.parametrize("env_id", _single_agent_ids())
def test_every_id_sees_the_tool_call_and_a_text_prompt(special_tok, env_id):
    from agentgym.integrations.verl import agent_loop_rows, play_verl_episode

    session = TextSession(env_id)
    name = session.reset(seed=1).tools[0]["function"]["name"]
    session.close()
    call = render_tool_call(name, {})
    row = agent_loop_rows(env_id, [1], max_turns=1)[0]
    ep = asyncio.run(play_verl_episode(row, ScriptedLLM(special_tok, [call]), special_tok))
    # the env parsed a call to that tool (at most it lacks arguments): the tags arrived
    assert ep.info["action_valid"] or f"({name})" in (ep.info["error"] or "")
    prompt = special_tok.decode(ep.prompt_ids)
    assert "base64" not in prompt and "data:image" not in prompt
