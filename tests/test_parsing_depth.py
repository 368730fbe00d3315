"""Parsing gives the same answer at any stack depth (issue 23).

A tool call nested 500-985 arrays deep used to get a schema error from a shallow caller,
"JSON nested too deeply" from a caller 600 frames deeper, and a ``RecursionError`` logged as
a parser bug near the interpreter's limit; replay of such a recording then DIVERGED. The
parser now rejects nesting beyond ``MAX_JSON_DEPTH`` with a scan that does not recurse.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from pathlib import Path

import gymnasium as gym
import pytest
from agentgym.wrappers import Record

import agentgym  # noqa: F401
from agentgym.parsing import (
    MAX_JSON_DEPTH,
    Tool,
    parse_action,
    parse_openai_tool_calls,
)
from agentgym.trajectory import replay

MOVE = Tool(
    "move",
    "Move one cell.",
    {
        "type": "object",
        "properties": {"direction": {"enum": ["up", "down"]}},
        "required": ["direction"],
    },
)
SAY = Tool("say", "Say something.", {"type": "object", "properties": {"text": {}}})
TOO_DEEP = f"JSON nested more than {MAX_JSON_DEPTH} levels deep"


def _nested_call(levels: int) -> str:
    """A move call whose direction is ``levels`` nested arrays (total depth levels + 2)."""
    return (
        '<tool_call>{"name": "move", "arguments": {"direction": '
        + "[" * levels
        + "]" * levels
        + "}}</tool_call>"
    )


def _at_depth(frames: int, fn: Callable[[], object]) -> object:
    if frames == 0:
        return fn()
    return _at_depth(frames - 1, fn)


def _in_thread(fn: Callable[[], object]) -> object:
    out: list[object] = []
    thread = threading.Thread(target=lambda: out.append(fn()))
    thread.start()
    thread.join()
    return out[0]


@pytest.mark.parametrize("levels", [500, 900, 985, 5000])
def test_deep_call_gets_one_clear_error_from_any_caller(levels: int, caplog):
    action = _nested_call(levels)
    with caplog.at_level(logging.WARNING, logger="agentgym.parsing"):
        results = [
            parse_action(action, [MOVE]),
            _at_depth(600, lambda: parse_action(action + " ", [MOVE])),
            _in_thread(lambda: parse_action(action + "  ", [MOVE])),
        ]
    errors = [r.errors for r in results]  # type: ignore[attr-defined]
    assert errors == [(f"tool call 1: {TOO_DEEP}; tool arguments must be flatter.",)] * 3
    assert "this is a bug" not in caplog.text


def test_depth_limit_boundary_is_exact():
    # the call object, its arguments object and the arrays: 2 + levels
    at_limit = parse_action(_nested_call(MAX_JSON_DEPTH - 2), [MOVE])
    assert at_limit.errors and TOO_DEEP not in at_limit.errors[0]  # a schema error instead
    over = parse_action(_nested_call(MAX_JSON_DEPTH - 1), [MOVE])
    assert over.errors[0].startswith(f"tool call 1: {TOO_DEEP}")


def test_brackets_inside_strings_do_not_count():
    text = '[[[[{{{{ \\" ]]' * 50
    action = (
        "<tool_call>" + json.dumps({"name": "say", "arguments": {"text": text}}) + "</tool_call>"
    )
    parsed = parse_action(action, [SAY])
    assert parsed.valid, parsed.errors
    assert parsed.tool_calls[0].arguments == {"text": text}


def test_structured_openai_calls_are_bounded_the_same_way():
    deep: object = "up"
    for _ in range(MAX_JSON_DEPTH + 5):
        deep = [deep]
    as_object = [{"function": {"name": "move", "arguments": {"direction": deep}}}]
    as_string = [{"function": {"name": "move", "arguments": json.dumps({"direction": deep})}}]
    for calls in (as_object, as_string):
        got = _at_depth(700, lambda calls=calls: parse_openai_tool_calls(calls, [MOVE]))
        shallow = parse_openai_tool_calls(calls, [MOVE])
        assert got.errors == shallow.errors  # type: ignore[attr-defined]
        assert shallow.errors[0].startswith(f"tool call 1: {TOO_DEEP}")
    ok = parse_openai_tool_calls(
        [{"function": {"name": "move", "arguments": {"direction": "up"}}}], [MOVE]
    )
    assert ok.valid and ok.tool_calls[0].arguments == {"direction": "up"}


def test_replay_of_a_deep_call_recording_does_not_diverge(tmp_path: Path):
    path = tmp_path / "deep.agtr"
    env = Record(gym.make("agentgym/Sokoban-Tiny-v0"), path)
    env.reset(seed=2)
    observation, *_ = env.step(_nested_call(985))
    env.close()
    assert TOO_DEEP in observation["text"]
    # replayed from deep inside a framework's stack and from a thread: same observation
    deep_report = _at_depth(600, lambda: replay(path))
    thread_report = _in_thread(lambda: replay(path))
    for report in (deep_report, thread_report):
        assert report.ok, report.format()  # type: ignore[attr-defined]
