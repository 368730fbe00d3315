"""The validation memo and ``ToolCall.to_dict``: faster steps with the same verdicts."""

from __future__ import annotations

import gymnasium as gym

import agentgym  # noqa: F401  (registers the envs)
from agentgym.parsing import Tool, parse_action, parse_openai_tool_calls

LIST_TOOL = Tool(
    "pick",
    "pick items",
    {
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"type": "integer"}}},
        "required": ["items"],
        "additionalProperties": False,
    },
)


def _call(args: str) -> str:
    return f'<tool_call>{{"name": "pick", "arguments": {args}}}</tool_call>'


def test_a_repeated_valid_call_is_answered_from_the_memo():
    tool = Tool("pick", "pick items", LIST_TOOL.parameters)
    first = parse_action(_call('{"items": [1, 2]}'), [tool])
    assert first.valid and tool.known_valid == {'{"items":[1,2]}': None}
    again = parse_action(_call('{"items":[1,2]}'), [tool])  # other spacing, same call
    assert again.valid and again.tool_calls[0].arguments == {"items": [1, 2]}


def test_invalid_arguments_are_never_memoised_and_keep_their_message():
    tool = Tool("pick", "pick items", LIST_TOOL.parameters)
    for _ in range(2):
        bad = parse_action(_call('{"items": ["a"]}'), [tool])
        assert not bad.valid and "'a' is not of type 'integer'" in bad.error_text()
    assert tool.known_valid == {}


def test_a_tuple_from_code_is_checked_by_the_schema_even_after_the_list_was_memoised():
    tool = Tool("pick", "pick items", LIST_TOOL.parameters)
    assert parse_action(_call('{"items": [1]}'), [tool]).valid
    # A structured call built in code: a tuple dumps like [1] but is not a JSON array.
    structured = parse_openai_tool_calls(
        [{"function": {"name": "pick", "arguments": {"items": (1,)}}}], [tool]
    )
    assert not structured.valid and "is not of type 'array'" in structured.error_text()


def test_info_tool_calls_are_copies_the_caller_may_edit():
    env = gym.make("agentgym/Sokoban-Tiny-v0")
    env.reset(seed=0)
    move = '<tool_call>{"name": "move", "arguments": {"direction": "up"}}</tool_call>'
    _, _, _, _, info = env.step(move)
    assert info["tool_calls"] == [{"name": "move", "arguments": {"direction": "up"}, "id": None}]
    info["tool_calls"][0]["arguments"]["direction"] = "down"
    _, _, _, _, info2 = env.step(move)
    assert info2["tool_calls"][0]["arguments"] == {"direction": "up"}
    admissible = info2["admissible_actions"]
    admissible.clear()  # editing one step's list leaves the next step's intact
    _, _, _, _, info3 = env.step(move)
    assert len(info3.get("admissible_actions", [])) in (0, 4)
    env.close()


def test_a_repeated_turn_gets_fresh_arguments_each_time():
    tool = Tool("pick", "pick items", LIST_TOOL.parameters)
    text = _call('{"items": [3, 4]}')
    first = parse_action(text, [tool])
    first.tool_calls[0].arguments["items"].append(99)  # the caller edits what it got
    again = parse_action(text, [tool])
    assert again.tool_calls[0].arguments == {"items": [3, 4]}
    assert again.tool_calls[0].arguments is not first.tool_calls[0].arguments


def test_a_repeated_turn_is_parsed_again_against_other_tools():
    tool = Tool("pick", "pick items", LIST_TOOL.parameters)
    text = _call('{"items": [5]}')
    assert parse_action(text, [tool]).valid
    unknown = parse_action(text, [])
    assert not unknown.valid and "unknown tool 'pick'" in unknown.error_text()
    other = Tool("pick", "pick items", {"type": "object", "properties": {}, "required": ["x"]})
    assert not parse_action(text, [other]).valid
    assert parse_action(text, [tool]).valid
