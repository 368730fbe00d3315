"""verl: the agent loop returns a valid AgentLoopOutput; the BaseInteraction form plays episodes."""

from __future__ import annotations

import asyncio
import inspect
import types

import pytest

from agentgym.integrations import verl as agverl
from agentgym.parsing import render_tool_call

ENV_ID = "agentgym/Sokoban-Tiny-v0"
MOVES = [render_tool_call("move", {"direction": d}) for d in ("up", "left", "down", "right")]


def test_agent_loop_against_real_verl():
    loop_mod = pytest.importorskip("verl.experimental.agent_loop.agent_loop")
    pytest.importorskip("transformers")
    from agentgym.integrations.offline import ScriptedLLM, char_tokenizer

    cls = agverl.AgentGymAgentLoop
    assert issubclass(cls, loop_mod.AgentLoopBase)
    assert loop_mod._agent_loop_registry[agverl.AGENT_NAME] == {
        "_target_": "agentgym.integrations.verl.AgentGymAgentLoop"
    }
    tok = char_tokenizer()
    llm = ScriptedLLM(tok, MOVES)

    class Server:  # verl's LLMServerClient.generate signature, answered by a scripted model
        async def generate(self, request_id, *, prompt_ids, sampling_params, **kw):
            ids, lps = await llm(prompt_ids)
            return types.SimpleNamespace(token_ids=ids, log_probs=lps)

    loop = object.__new__(cls)  # verl builds it from its trainer config; we set what run uses
    loop.server_manager = Server()
    loop.tokenizer = tok
    loop.rollout_config = types.SimpleNamespace(response_length=2048, prompt_length=4096)
    row = agverl.agent_loop_rows(ENV_ID, [7], max_turns=6)[0]
    out = asyncio.run(loop.run({"temperature": 1.0}, **row))
    assert isinstance(out, loop_mod.AgentLoopOutput)
    assert len(out.response_ids) == len(out.response_mask) == len(out.response_logprobs)
    assert set(out.response_mask) == {0, 1} and out.num_turns >= 3
    assert out.reward_score == pytest.approx(sum(out.extra_fields["turn_scores"]))
    assert isinstance(out.extra_fields["state_key"], str)


def test_rows_without_env_id_are_a_typed_error():
    from agentgym.error import InvalidConfigError

    with pytest.raises(InvalidConfigError):
        agverl.episode_spec({"extra_info": {"seed": 1}})
    assert agverl.episode_spec({"extra_info": {"env_id": ENV_ID, "seed": "4"}})["seed"] == 4


# verl's published BaseInteraction (verl/interactions/base.py, verl <= 0.5; gone from 0.9)
PUBLISHED_INTERACTION = {
    "start_interaction": ["self", "instance_id", "kwargs"],
    "generate_response": ["self", "instance_id", "messages", "kwargs"],
    "calculate_score": ["self", "instance_id", "kwargs"],
    "finalize_interaction": ["self", "instance_id", "kwargs"],
}


def test_interaction_matches_the_published_signature_and_plays():
    for name, params in PUBLISHED_INTERACTION.items():
        method = getattr(agverl.AgentGymInteraction, name)
        assert inspect.iscoroutinefunction(method)
        got = list(inspect.signature(method).parameters)
        assert [p for p in got if p in params] == params, (name, got)

    async def main():
        inter = agverl.AgentGymInteraction({"env_id": ENV_ID})
        row = agverl.interaction_rows(ENV_ID, [2])[0]
        kwargs = row["extra_info"]["interaction_kwargs"]
        iid = await inter.start_interaction(None, seed=kwargs["seed"], task_id=kwargs["task_id"])
        messages = list(row["prompt"])
        results = []
        for move in MOVES * 3:
            messages.append({"role": "assistant", "content": move})
            done, reply, reward, _info = await inter.generate_response(iid, messages)
            messages.append({"role": "user", "content": reply})
            results.append(reward)
            if done:
                break
        score = await inter.calculate_score(iid)
        await inter.finalize_interaction(iid)
        return results, score

    rewards, score = asyncio.run(main())
    assert score == pytest.approx(sum(rewards)) and len(rewards) >= 1
