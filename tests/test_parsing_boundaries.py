"""The parser's rules at their edges, with the exact result each turn must give.

The call limit and the nesting limit on both sides, every way a call object can be wrong (and
the message it gets), answers from both channels, and what counts as free text. The fuzz tests
elsewhere show the parser never raises; these show it says the right thing.
"""

from __future__ import annotations

import json

import pytest

from agentgym.parsing import (
    ANSWER_TOOL,
    MAX_JSON_DEPTH,
    Tool,
    _json_too_deep,
    _value_too_deep,
    fold_answer_calls,
    parse_action,
    parse_openai_tool_calls,
    render_tool_call,
)

ADD = Tool(
    "add",
    "Add n.",
    {
        "type": "object",
        "properties": {"n": {"type": "integer", "maximum": 3}},
        "required": ["n"],
        "additionalProperties": False,
    },
)
ANY = Tool("any", "Takes anything.", {"type": "object"})


def call(payload: object) -> str:
    return f"<tool_call>{json.dumps(payload)}</tool_call>"


def test_calls_up_to_the_limit_pass_and_one_more_is_an_error():
    two = render_tool_call("add", {"n": 1}) + render_tool_call("add", {"n": 2})
    ok = parse_action(two, [ADD], max_calls=2)
    assert ok.valid and [c.arguments["n"] for c in ok.tool_calls] == [1, 2]
    over = parse_action(two + render_tool_call("add", {"n": 3}), [ADD], max_calls=2)
    assert over.errors == ("3 tool calls in one turn; at most 2 are allowed.",)
    assert [c.arguments["n"] for c in over.tool_calls] == [1, 2]


def _nested(levels: int) -> str:
    """A call whose JSON nests ``levels`` deep in all (the call object is level 1)."""
    inner = "[" * (levels - 2) + "]" * (levels - 2)
    return f'<tool_call>{{"name": "any", "arguments": {{"x": {inner}}}}}</tool_call>'


def test_nesting_at_the_limit_parses_and_one_deeper_is_refused():
    assert parse_action(_nested(MAX_JSON_DEPTH), [ANY]).valid
    deep = parse_action(_nested(MAX_JSON_DEPTH + 1), [ANY])
    assert deep.errors == (
        f"tool call 1: JSON nested more than {MAX_JSON_DEPTH} levels deep; "
        "tool arguments must be flatter.",
    )


def test_depth_scans_count_brackets_not_strings():
    assert _json_too_deep("[" * 3 + "]" * 3, 3) is False
    assert _json_too_deep("[" * 4 + "]" * 4, 3) is True
    assert _json_too_deep('["[[[[[[", {"a": "{{{{{{"}]', 3) is False
    assert _json_too_deep("[]" * 10, 3) is False  # many brackets, never deep
    assert _json_too_deep("[[[]]][]", 3) is False  # more brackets than the limit, depth 3
    assert _json_too_deep("[[[[]]]]", 3) is True
    assert _value_too_deep([[[]]], 3) is False
    assert _value_too_deep([[[[]]]], 3) is True
    assert _value_too_deep({"a": {"b": {"c": 1}}}, 3) is False
    assert _value_too_deep({"a": {"b": {"c": {}}}}, 3) is True


@pytest.mark.parametrize(
    ("payload", "error"),
    [
        (["a"], 'tool call 1: expected a JSON object like {"name": "tool_name", "arguments": {...}}, got list'),
        ({"arguments": {}}, 'tool call 1: missing "name" (a string naming the tool).'),
        ({"name": "", "arguments": {}}, 'tool call 1: missing "name"'),
        ({"name": "add", "arguments": "{oops"}, 'tool call 1: "arguments" is a string that is not valid JSON'),
        ({"name": "add", "arguments": [1]}, 'tool call 1: "arguments" must be a JSON object, got list.'),
        ({"name": "ad", "arguments": {}}, "tool call 1: unknown tool 'ad'. Did you mean 'add'? Available tools: add."),
        ({"name": "zzz", "arguments": {}}, "tool call 1: unknown tool 'zzz'. Available tools: add."),
        ({"name": "add", "arguments": {}}, "tool call 1 (add): 'n' is a required property."),
        ({"name": "add", "arguments": {"n": 1, "m": 2}}, "(allowed arguments: n)."),
        ({"name": "add", "arguments": {"n": 4}}, "tool call 1 (add): argument 'n': 4 is greater than the maximum of 3."),
    ],
)  # fmt: skip
def test_each_wrong_call_gets_its_own_message(payload, error):
    parsed = parse_action(call(payload), [ADD])
    assert not parsed.valid and parsed.tool_calls == ()
    assert len(parsed.errors) == 1 and error in parsed.errors[0], parsed.errors


def test_arguments_given_as_json_text_empty_or_null_are_accepted():
    assert parse_action(call({"name": "add", "arguments": '{"n": 2}'}), [ADD]).tool_calls[
        0
    ].arguments == {"n": 2}
    assert parse_action(call({"name": "any", "arguments": ""}), [ANY]).tool_calls[0].arguments == {}
    assert (
        parse_action(call({"name": "any", "arguments": None}), [ANY]).tool_calls[0].arguments == {}
    )
    assert parse_action(call({"name": "add", "parameters": {"n": 3}}), [ADD]).tool_calls[
        0
    ].arguments == {"n": 3}
    assert parse_action(call({"name": "any"}), [ANY]).tool_calls[0].arguments == {}  # fmt: skip


def test_a_call_keeps_a_string_id_only():
    assert parse_action(call({"name": "any", "id": "c1"}), [ANY]).tool_calls[0].id == "c1"
    assert parse_action(call({"name": "any", "id": 7}), [ANY]).tool_calls[0].id is None


def test_no_tools_says_so():
    parsed = parse_action(call({"name": "add", "arguments": {}}))
    assert parsed.errors == (
        "tool call 1: unknown tool 'add'. Available tools: none (this env takes no tool calls).",
    )


def test_blocks_fences_and_free_text():
    fenced = '<tool_call>```json\n{"name": "add", "arguments": {"n": 1}}\n```</tool_call>'
    assert parse_action(fenced, [ADD]).tool_calls[0].arguments == {"n": 1}
    assert parse_action("<tool_call>  </tool_call>", [ADD]).errors == (
        "tool call 1: empty <tool_call> block.",
    )
    mixed = parse_action(
        "think   a bit\n" + render_tool_call("add", {"n": 1}) + "  then stop", [ADD]
    )
    assert mixed.valid and mixed.text == "think a bit then stop"
    unclosed = parse_action('before <tool_call>{"name": "add"', [ADD])
    assert unclosed.errors == ("a <tool_call> tag is not closed: end each call with </tool_call>.",)
    assert unclosed.text == "before" and unclosed.tool_calls == ()


def test_answers_one_is_kept_two_are_an_error_and_unclosed_is_reported():
    assert parse_action("<answer>  42 </answer>").answer == "42"
    assert parse_action("<answer>42</answer>").valid
    two = parse_action("<answer>1</answer> and <answer>2</answer>")
    assert (two.answer, two.errors) == ("2", ("2 <answer> blocks; give exactly one.",))
    assert two.text == "and"
    open_ = parse_action("<answer>1")
    assert open_.answer is None
    assert open_.errors == ("an <answer> tag is not closed: end it with </answer>.",)


def test_non_text_actions():
    decoded = parse_action(render_tool_call("add", {"n": 1}).encode(), [ADD])
    assert decoded.errors == ("the action was bytes, not text; decoded as UTF-8.",)
    assert decoded.tool_calls[0].arguments == {"n": 1}
    number = parse_action(12, [ADD])
    assert number.errors == ("the action must be a string, got int.",) and number.raw == "12"


def test_answer_tool_calls_fold_into_the_answer_and_a_second_answer_is_an_error():
    one = fold_answer_calls(
        parse_action(call({"name": "answer", "arguments": {"answer": "7"}}), [ANSWER_TOOL])
    )
    assert (one.answer, one.tool_calls, one.errors) == ("7", (), ())
    both = fold_answer_calls(
        parse_action(
            "<answer>6</answer>" + call({"name": "answer", "arguments": {"answer": "7"}}),
            [ANSWER_TOOL],
        )
    )
    assert both.answer == "7"
    assert both.errors == (
        "2 answers in one turn (answer tool calls and <answer> blocks); give exactly one.",
    )
    plain = parse_action("<answer>6</answer>", [ANSWER_TOOL])
    assert fold_answer_calls(plain) is plain  # fmt: skip


def test_structured_calls_are_checked_like_text_calls():
    got = parse_openai_tool_calls(
        [
            {"id": "a", "type": "function", "function": {"name": "add", "arguments": '{"n": 1}'}},
            {"name": "add", "arguments": {"n": 9}},
            "junk",
        ],
        [ADD],
        content="<answer>x</answer>",
    )
    assert [(c.name, c.arguments, c.id) for c in got.tool_calls] == [("add", {"n": 1}, "a")]
    assert got.answer == "x" and len(got.errors) == 2
    assert "argument 'n': 9 is greater than the maximum of 3" in got.errors[0]
    assert got.errors[1].startswith("tool call 3: expected a JSON object")
    deep: dict = {}
    node = deep
    for _ in range(MAX_JSON_DEPTH):
        node["a"] = {}
        node = node["a"]
    too_deep = parse_openai_tool_calls([{"name": "any", "arguments": deep}], [ANY])
    assert "nested more than" in too_deep.errors[0]
    not_list = parse_openai_tool_calls({"name": "add"}, [ADD])
    assert not_list.errors == ("tool_calls must be a list of tool-call objects.",)
