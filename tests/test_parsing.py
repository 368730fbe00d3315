"""The one tool-call parser: a table of turns and what it must make of them, plus fuzzing."""

from __future__ import annotations

import json
from typing import Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgym.parsing import (
    Tool,
    parse_action,
    parse_openai_tool_calls,
    render_tool_call,
    tool_from_function,
)

ZOOM = Tool(
    "zoom",
    "Zoom into a box.",
    {
        "type": "object",
        "properties": {
            "box": {"type": "array", "items": {"type": "number"}, "minItems": 4, "maxItems": 4},
            "factor": {"type": "number", "minimum": 1, "maximum": 8},
        },
        "required": ["box"],
        "additionalProperties": False,
    },
)
SEARCH = Tool(
    "search",
    "Search.",
    {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
)
TOOLS = [ZOOM, SEARCH]


@pytest.mark.parametrize(
    ("text", "calls", "answer", "error"),
    [
        (
            '<tool_call>{"name": "search", "arguments": {"query": "a"}}</tool_call>',
            [("search", {"query": "a"})],
            None,
            None,
        ),
        (
            'think first <tool_call>{"name": "search", "arguments": "{\\"query\\": \\"b\\"}"}</tool_call>',
            [("search", {"query": "b"})],
            None,
            None,
        ),
        (
            '<tool_call>\n```json\n{"name": "search", "arguments": {"query": "c"}}\n```\n</tool_call>',
            [("search", {"query": "c"})],
            None,
            None,
        ),
        (
            '<tool_call>{"name": "search", "arguments": {"query": "a"}}</tool_call><tool_call>{"name": "zoom", "arguments": {"box": [0, 0, 1, 1]}}</tool_call>',
            [("search", {"query": "a"}), ("zoom", {"box": [0, 0, 1, 1]})],
            None,
            None,
        ),
        ("<answer> 42 </answer>", [], "42", None),
        ("", [], None, None),
        ("<tool_call>", [], None, "not closed"),
        ("<tool_call>{bad json}</tool_call>", [], None, "invalid JSON"),
        (
            '<tool_call>{"name": "serch", "arguments": {"query": "a"}}</tool_call>',
            [],
            None,
            "Did you mean 'search'",
        ),
        (
            '<tool_call>{"name": "zoom", "arguments": {"box": [1, 2]}}</tool_call>',
            [],
            None,
            "argument 'box'",
        ),
        (
            '<tool_call>{"name": "zoom", "arguments": {"box": [0, 0, 1, 1], "factor": 100}}</tool_call>',
            [],
            None,
            "greater than the maximum of 8",
        ),
        (
            '<tool_call>{"name": "zoom", "arguments": {"box": [0, 0, 1, 1], "color": "red"}}</tool_call>',
            [],
            None,
            "allowed arguments: box, factor",
        ),
        (
            '<tool_call>{"name": "zoom", "arguments": {}}</tool_call>',
            [],
            None,
            "'box' is a required property",
        ),
        ('<tool_call>["zoom"]</tool_call>', [], None, "expected a JSON object"),
        ('<tool_call>{"arguments": {}}</tool_call>', [], None, 'missing "name"'),
        ("<answer>1</answer><answer>2</answer>", [], "2", "give exactly one"),
        ("<answer>unfinished", [], None, "not closed"),
    ],
)
def test_parse_table(text, calls, answer, error):
    parsed = parse_action(text, TOOLS)
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == calls
    assert parsed.answer == answer
    if error is None:
        assert parsed.valid, parsed.errors
    else:
        assert not parsed.valid and error in parsed.error_text()


def test_a_good_call_survives_next_to_a_bad_one():
    text = render_tool_call("search", {"query": "x"}) + "<tool_call>{oops}</tool_call>"
    parsed = parse_action(text, TOOLS)
    assert [c.name for c in parsed.tool_calls] == ["search"]
    assert parsed.errors == (
        "tool call 2: invalid JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1)).",
    )


def test_too_many_calls_are_cut_with_an_error():
    parsed = parse_action(render_tool_call("search", {"query": "x"}) * 20, TOOLS, max_calls=3)
    assert len(parsed.tool_calls) == 3 and "at most 3" in parsed.error_text()


@pytest.mark.parametrize("bad", [None, 42, ["list"], b"\xff\xfe<answer>x</answer>"])
def test_non_string_actions_are_reported_not_raised(bad):
    parsed = parse_action(bad, TOOLS)
    assert not parsed.valid


def test_render_and_parse_round_trip_unicode():
    text = render_tool_call("search", {"query": "中文 😀"})
    assert parse_action(text, TOOLS).tool_calls[0].arguments == {"query": "中文 😀"}


def test_openai_structured_calls_are_validated_like_text():
    parsed = parse_openai_tool_calls(
        [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "search", "arguments": json.dumps({"query": "q"})},
            },
            {"id": "c2", "type": "function", "function": {"name": "zoom", "arguments": "{}"}},
        ],
        TOOLS,
        content="<answer>no</answer>",
    )
    assert [c.id for c in parsed.tool_calls] == ["c1"]
    assert parsed.answer == "no"
    assert "tool call 2 (zoom)" in parsed.error_text()
    assert not parse_openai_tool_calls("nope", TOOLS).valid


def test_tool_from_function_reads_signature_and_docstring():
    def press(key: Literal["Enter", "Tab"], times: int = 1) -> None:
        """Press a key.

        Args:
            key: Which key.
            times: How often.
        """

    tool = tool_from_function(press)
    assert tool.description == "Press a key."
    assert tool.parameters["properties"]["key"] == {
        "enum": ["Enter", "Tab"],
        "description": "Which key.",
    }
    assert tool.parameters["required"] == ["key"]
    assert parse_action(render_tool_call("press", {"key": "Esc"}), [tool]).errors


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_never_raises_on_any_text(text):
    parsed = parse_action(text, TOOLS)
    assert isinstance(parsed.errors, tuple)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "<tool_call>",
                "</tool_call>",
                "<answer>",
                "</answer>",
                "{",
                "}",
                '"name"',
                ":",
                '"zoom"',
                "[",
                "]",
                ",",
                "x",
                " ",
            ]
        ),
        max_size=60,
    )
)
def test_never_raises_on_tag_soup(parts):
    parse_action("".join(parts), TOOLS)
