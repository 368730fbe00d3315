"""SkyRL-gym 0.4: AgentGymTextEnv through ``skyrl_gym.make``, and the prompt SkyRL builds.

SkyRL's trainer (skyrl-train) needs Python >= 3.12 and vLLM, so its generator cannot run
here. Its agent loop does exactly this with an env (skyrl_gym_generator.py):
``env = skyrl_gym.make(env_class, env_config=..., extras=env_extras)``, then
``chat, _ = env.init(prompt)`` (the metadata is dropped) and
``tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=True)``; each
``step`` output's ``observations`` are tokenised the same way. :func:`generator_prompt`
repeats those calls.
"""

from __future__ import annotations

import json

import pytest

from agentgym.integrations.skyrl import AgentGymTextEnv
from agentgym.parsing import render_tool_call

ENV_ID = "agentgym/Sokoban-Tiny-v0"
UP = render_tool_call("move", {"direction": "up"})

skyrl_gym = pytest.importorskip("skyrl_gym")
pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def tok():
    from examples.integrations.offline import char_tokenizer

    return char_tokenizer()


def generator_prompt(tok, env_id, extras):
    """What SkyRL's agent loop does before the first generation: make, init, template."""
    from agentgym.integrations.skyrl import register

    register()
    env = skyrl_gym.make("agentgym", env_config={}, extras={"env_id": env_id, **extras})
    chat, _metadata_dropped_by_skyrl = env.init([{"role": "user", "content": "replaced"}])
    ids = tok.apply_chat_template(chat, add_generation_prompt=True, tokenize=True)
    if isinstance(ids, dict) or hasattr(ids, "keys"):
        ids = ids["input_ids"]
    return env, chat, tok.decode(ids)


def test_tool_schemas_reach_the_prompt_skyrl_builds(tok):
    from skyrl_gym.envs.base_text_env import BaseTextEnv

    env, _chat, prompt = generator_prompt(tok, ENV_ID, {"seed": 3, "max_turns": 5})
    try:
        assert isinstance(env, BaseTextEnv)
        tools = env.session.tools
        assert tools
        for tool in tools:  # name, description and every parameter are in the prompt
            fn = tool["function"]
            assert f'"name": "{fn["name"]}"' in prompt
            assert fn["description"] in prompt
            for param in fn["parameters"]["properties"]:
                assert f'"{param}"' in prompt
        out = env.step(UP)
        assert out["metadata"]["action_valid"] and out["observations"][0]["role"] == "user"
    finally:
        env.close()


def test_visual_ids_give_the_question_and_an_images_left_out_note(tok):
    env, chat, prompt = generator_prompt(tok, "agentgym/VisualChart-v0", {"seed": 0})
    try:
        question = env.session.messages[-1]["content"][-1]["text"]  # the env's own message
        assert all(isinstance(m["content"], str) for m in chat)  # what a text template needs
        assert question in prompt
        assert "image(s) left out" in prompt
        assert "base64" not in prompt and "data:image" not in prompt
        zoom = render_tool_call("zoom", {"box": [0, 0, 100, 100]})
        obs = env.step(zoom)["observations"]
        assert obs and all(isinstance(m["content"], str) for m in obs)
        assert "image(s) left out" in obs[0]["content"] and "base64" not in obs[0]["content"]
    finally:
        env.close()


def test_max_turns_and_missing_env_id():
    from agentgym.error import InvalidConfigError

    env = AgentGymTextEnv({"max_turns": 2}, {"env_id": ENV_ID, "seed": 1})
    env.init()
    assert not env.step(UP)["done"]
    last = env.step(UP)
    assert last["done"] and last["observations"] == []
    assert env.get_metrics()["turns"] == 2
    env.close()
    env.close()  # idempotent
    with pytest.raises(InvalidConfigError):
        AgentGymTextEnv({}, {})


def _single_agent_ids():
    import agentgym

    return [r.id for r in agentgym.list_envs() if not r.multi_agent]


@pytest.mark.parametrize("env_id", _single_agent_ids())
def test_every_id_gives_a_text_prompt_with_its_tools(tok, env_id):
    env, chat, prompt = generator_prompt(tok, env_id, {"seed": 1})
    try:
        assert all(isinstance(m["content"], str) for m in chat)
        assert "base64" not in prompt
        for tool in env.session.tools:  # the full schema, as JSON, reached the prompt
            assert json.dumps(tool, ensure_ascii=False) in prompt
        out = env.step("not a tool call")  # never raises; the reply is text too
        assert all(isinstance(m["content"], str) for m in out["observations"])
    finally:
        env.close()


def test_answer_tool_option_reaches_the_prompt_and_ends_the_episode(tok):
    env, _chat, prompt = generator_prompt(
        tok, "agentgym/CodeMath-L1-v0", {"seed": 0, "answer_tool": "auto"}
    )
    try:
        assert '"name": "answer"' in prompt
        out = env.step(render_tool_call("answer", {"answer": "0"}))
        assert out["done"] and out["metadata"]["action_valid"]
    finally:
        env.close()
