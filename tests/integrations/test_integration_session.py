"""TextSession: one chat view of any env, text or structured OpenAI tool calls."""

from __future__ import annotations

import asyncio
import json

import gymnasium as gym
import pytest

import agentgym
from agentgym.error import InvalidConfigError
from agentgym.integrations.session import TextSession, assistant_text
from agentgym.parsing import render_tool_call

ENV_ID = "agentgym/Sokoban-Tiny-v0"
UP = render_tool_call("move", {"direction": "up"})


def _call(name, arguments, call_id="c1"):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


@pytest.mark.parametrize("env_id", [r.id for r in agentgym.list_envs(multi_agent=False)][:3])
def test_reset_gives_messages_and_tools_for_any_id(env_id):
    s = TextSession(env_id)
    start = s.reset(seed=1)
    assert start.messages[-1]["role"] == "user" and start.messages[-1]["content"]
    assert all(t["type"] == "function" for t in start.tools)
    assert start.info["task_id"] == s.reset(seed=1).info["task_id"]
    s.close()


def test_text_and_structured_calls_reach_the_env_identically():
    a, b = TextSession(ENV_ID), TextSession(ENV_ID)
    a.reset(seed=4)
    b.reset(seed=4)
    ta = a.step(UP)
    tb = b.step(
        {"role": "assistant", "content": None, "tool_calls": [_call("move", '{"direction": "up"}')]}
    )
    assert ta.reward == tb.reward and ta.info["state_key"] == tb.info["state_key"]
    assert ta.messages[0]["role"] == "user"
    assert tb.messages[0]["role"] == "tool" and tb.messages[0]["tool_call_id"] == "c1"
    assert b.messages[-2]["tool_calls"][0]["id"] == "c1"  # the assistant turn is kept as sent


def test_malformed_structured_calls_get_the_parser_error_and_penalty():
    s = TextSession(ENV_ID)
    s.reset(seed=0)
    bad_json = s.step({"tool_calls": [_call("move", '{"direction": ')]})
    assert (
        bad_json.info["action_valid"] is False
        and bad_json.info["reward_components"]["format"] == -1
    )
    unknown = s.step({"tool_calls": [_call("mvoe", {"direction": "up"})]})
    assert "mvoe" in unknown.info["error"]
    two = s.step(
        {
            "tool_calls": [
                _call("move", {"direction": "up"}, "a"),
                _call("move", {"direction": "up"}, "b"),
            ]
        }
    )
    assert [m["tool_call_id"] for m in two.messages] == ["a", "b"]


def test_assistant_text_never_raises():
    for turn in [
        "",
        {"content": [{"type": "text", "text": "hi"}]},
        {"tool_calls": "x"},
        {"tool_calls": [1]},
        5,
    ]:
        assert isinstance(assistant_text(turn), str)


def test_async_session_runs_env_off_the_loop():
    async def main():
        s = TextSession(gym.make(ENV_ID))
        await s.areset(seed=2)
        turn = await s.astep(UP)
        await s.aclose()
        return turn

    assert asyncio.run(main()).info["action_valid"] is True


def test_step_before_reset_and_bad_role_are_errors():
    s = TextSession(ENV_ID)
    with pytest.raises(gym.error.ResetNeeded):
        s.step(UP)
    with pytest.raises(InvalidConfigError):
        TextSession(ENV_ID, feedback_role="robot")


def test_a_tool_calls_field_that_is_not_a_list_is_judged_by_the_env_not_raised():
    """A client sending ``tool_calls: 5`` (or one bare object) gets an explaining observation
    for the turn the env already took, never a TypeError after the env stepped."""
    from agentgym.integrations.session import TextSession

    s = TextSession("agentgym/Sokoban-Tiny-v0")
    s.reset(seed=0)
    for bad in (5, "x", {"name": "move", "arguments": {"direction": "up"}}):
        turn = s.step({"role": "assistant", "content": "", "tool_calls": bad})
        assert [m["role"] for m in turn.messages] == ["tool"]
        if isinstance(bad, dict):  # one bare call object is taken as a list of one
            assert turn.info["action_valid"] is True
        else:
            assert turn.info["action_valid"] is False
            assert "expected a JSON object" in turn.messages[0]["content"]
    s.close()


class EchoesTheModel(gym.Wrapper):
    """A third-party env that echoes the model's text verbatim into its observation (as the
    web envs did with unknown element ids before issue 23)."""

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return (
            {**obs, "text": f"You wrote: {action}\n{obs['text']}"},
            reward,
            terminated,
            truncated,
            info,
        )


def test_observations_reach_every_adapter_as_valid_utf8_whatever_the_env_echoes():
    """TextSession is the core of every framework adapter: a lone surrogate an env echoes
    becomes U+FFFD in the messages (tokenizers and the wire cannot encode it)."""
    s = TextSession(EchoesTheModel(gym.make(ENV_ID)), feedback_role="user")
    s.reset(seed=1)
    turn = s.step("half an emoji \ud83d here")
    text = turn.messages[-1]["content"]
    assert text.startswith("You wrote: half an emoji \ufffd here\n")
    text.encode("utf-8")
    # the assistant's own turn is kept as sent: it is the model's output, not an observation
    assert s.messages[-2]["content"] == "half an emoji \ud83d here"
    s.close()


# ---- issue 38: arguments that hold the closing tag, failed first resets ----------------------

TWENTY_Q = "agentgym/UserTwentyQuestions-v0"
TRICKY = 'Is it alive? </tool_call> <tool_call>{"name": "answer"} </answer> \\ud800 "quoted"'


def _arguments_seen(turn) -> dict:
    """The arguments the env parsed for the turn's one call."""
    assert turn.info["action_valid"] is True, turn.info.get("error")
    (call,) = turn.info["tool_calls"]
    return call["arguments"]


@pytest.mark.parametrize(
    "form",
    ["openai", "openai-json-string", "flat", "text"],
)
def test_an_argument_holding_the_closing_tag_reaches_the_env_whole(form):
    """Structured calls are never cut in two by their own content (TRL, verifiers, MCP and
    the server all step through this session; TRL writes text with ``render_tool_call``)."""
    args = {"message": TRICKY}
    turns = {
        "openai": {"content": "", "tool_calls": [_call("talk", args)]},
        "openai-json-string": {"content": "", "tool_calls": [_call("talk", json.dumps(args))]},
        "flat": {"tool_calls": [{"id": "c1", "name": "talk", "arguments": json.dumps(args)}]},
        "text": render_tool_call("talk", args),
    }
    s = TextSession(TWENTY_Q)
    try:
        s.reset(seed=0)
        turn = s.step(turns[form])
        assert _arguments_seen(turn) == args
        assert turn.info["reward_components"]["format"] == 0.0
    finally:
        s.close()


def test_assistant_text_parses_back_to_the_structured_calls_it_was_given():
    from agentgym.parsing import Tool, parse_action

    def tool(name: str, arg: str) -> Tool:
        return Tool(name, "", {"type": "object", "properties": {arg: {"type": "string"}}})

    calls = [_call("talk", {"message": "a</tool_call>b"}, "x"), _call("search", {"query": "</"})]
    text = assistant_text({"content": "thinking", "tool_calls": calls})
    parsed = parse_action(text, [tool("talk", "message"), tool("search", "query")])
    assert parsed.errors == ()
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == [
        ("talk", {"message": "a</tool_call>b"}),
        ("search", {"query": "</"}),
    ]
    assert parsed.text == "thinking"


def test_a_failed_first_reset_leaves_the_session_usable_with_the_env_checker_on():
    """gymnasium's passive checker marks its first reset checked even when it raised, then
    fails the first step on the missing reset data: the session was bricked."""
    s = TextSession(ENV_ID, env_kwargs={"disable_env_checker": False})
    try:
        with pytest.raises(Exception, match="no-such-task"):
            s.reset(options={"task_id": "no-such-task"})
        start = s.reset(seed=0)
        assert start.info["task_id"]
        turn = s.step(UP)
        assert turn.info["action_valid"] is True
        assert s.env.unwrapped.__class__.__name__ == "SokobanEnv"
    finally:
        s.close()
