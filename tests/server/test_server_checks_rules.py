"""The server's request checks, called directly: each rule on both sides of its limit, and the
field, status and code each refusal carries (the HTTP tests cover the same rules end to end).
"""

from __future__ import annotations

import json

import pytest

from agentgym.server import checks
from agentgym.server.sessions import ServerLimits, SessionError

LIMITS = ServerLimits(max_action_chars=20, max_json_depth=3)


def refused(fn, *args) -> SessionError:
    with pytest.raises(SessionError) as exc:
        fn(*args)
    return exc.value


def test_json_depth_at_the_limit_passes_and_one_deeper_is_refused():
    assert checks.parse_json("[[[1]]]", LIMITS) == [[[1]]]
    err = refused(checks.parse_json, "[[[[1]]]]", LIMITS)
    assert (err.code, err.status, err.field) == ("INVALID_JSON", 400, "[0][0][0]")
    assert "nested more than 3 levels deep" in str(err)
    err = refused(checks.parse_json, '{"a": {"b": {"c": {}}}}', LIMITS, "options")
    assert err.field == "a.b.c"
    assert checks.too_deep({"a": [1, {"b": 2}]}, 3) is None
    assert checks.too_deep([[[[]]]], 4) is None and checks.too_deep([[[[]]]], 3) == "[0][0][0]"
    assert checks.too_deep(5, 0) is None and checks.too_deep([], 0) == ""


def test_invalid_json_names_the_part_of_the_request():
    err = refused(checks.parse_json, "{oops", LIMITS, "action")
    assert (err.code, err.field) == ("INVALID_JSON", "action")
    assert str(err).startswith("invalid JSON in the action:")
    err = refused(checks.parse_json, "[" * 5, LIMITS)  # deep and broken: still a clear 400
    assert (err.code, err.status) == ("INVALID_JSON", 400)


def test_reset_arguments():
    assert checks.reset_args(None) == (None, None)
    assert checks.reset_args({}) == (None, None)
    assert checks.reset_args({"seed": 0}) == (0, None)
    assert checks.reset_args({"seed": 3, "task_id": "t1", "options": {"x": 1}}) == (
        3,
        {"x": 1, "task_id": "t1"},
    )
    assert checks.reset_args({"task_id": 7}) == (None, {"task_id": 7})
    for seed in (-1, True, 1.5, "3"):
        err = refused(checks.reset_args, {"seed": seed}, "reset.")
        assert err.field == "reset.seed" and "non-negative integer" in str(err)
    err = refused(checks.reset_args, {"options": [1]})
    assert err.field == "options" and "got list: [1]" in str(err)
    err = refused(checks.reset_args, {"task_id": True})
    assert err.field == "task_id" and "got bool" in str(err)
    err = refused(checks.reset_args, [1], "reset.")
    assert err.field == "reset" and "got list" in str(err)
    assert refused(checks.reset_args, "x").field == "body"


def test_episode_ids_printable_ascii_from_1_to_255_characters():
    assert checks.episode_id(None) is None
    assert checks.episode_id("!") == "!" and checks.episode_id("~" * 255) == "~" * 255
    for bad in ("", "a" * 256, "a b", "a\nb", "é", "a\x7f", 5):
        err = refused(checks.episode_id, bad)
        assert (err.field, err.status) == ("episode_id", 400), bad


def test_action_forms_and_the_size_limit():
    assert checks.action("x" * 20, LIMITS) == "x" * 20
    err = refused(checks.action, "x" * 21, LIMITS)
    assert (err.status, err.field) == (413, "action")
    assert "holds 21 characters; this server accepts at most 20" in str(err)
    assert checks.action({"text": "hi"}, LIMITS) == "hi"
    assert checks.action({"message": {"content": "hi"}}, ServerLimits()) == {
        "content": "hi",
        "tool_calls": [],
    }
    msg = {"content": None, "tool_calls": [{"id": "1"}]}
    assert checks.action(msg, ServerLimits()) == msg
    big = {"content": "x" * 10, "tool_calls": [{"id": "1234"}]}
    assert len(json.dumps(big)) > 20
    assert refused(checks.action, big, LIMITS).status == 413


@pytest.mark.parametrize(
    ("data", "field", "words"),
    [
        (5, "action", "action is int"),
        (None, "action", "action is null"),
        ({"message": "hi"}, "action.message", "must be an OpenAI assistant message object"),
        ({"text": "a", "content": "b"}, "action.text", "has both text and content/tool_calls"),
        ({"text": 3}, "action.text", "action.text must be a string, got int"),
        ({"other": 1}, "action", "got keys ['other']"),
        ({"content": 5}, "action.content", "got int"),
        ({"content": ["x"]}, "action.content", "got list"),
        ({"content": "", "tool_calls": 5}, "action.tool_calls", "got int: 5"),
        ({"content": "", "tool_calls": [{}, "x"]}, "action.tool_calls[1]", "got str"),
    ],
)
def test_each_malformed_action_names_its_field(data, field, words):
    err = refused(checks.action, data, ServerLimits())
    assert (err.field, err.status, err.code) == (field, 400, "VALIDATION_ERROR")
    assert words in str(err), str(err)


def test_content_parts_and_text_with_null_message_fields_are_accepted():
    parts = {"content": [{"type": "text", "text": "hi"}], "tool_calls": None}
    assert checks.action(parts, ServerLimits()) == {"content": parts["content"], "tool_calls": []}
    assert checks.action({"text": "t", "content": None, "tool_calls": None}, LIMITS) == "t"
