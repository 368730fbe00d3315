"""Checking what clients send, before any env sees it.

Every check raises a :class:`~agentgym.server.errors.BadRequest` (HTTP 4xx, or a WebSocket
error frame) naming the field at fault, with what was expected and what came. Nothing here
touches a session, so a refused request never changes an episode.

What is checked here is the *wire format* (JSON, nesting, types of the request's own
fields). What the model wrote (a tool call to an unknown tool, arguments that are not valid
JSON, text with no tool call) is not a malformed request: the env judges it and answers with
an explaining observation and a format penalty, as in every other adapter.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agentgym.server.errors import BadRequest, InvalidJSON, RequestTooLarge
from agentgym.server.payloads import loads
from agentgym.server.sessions import ServerLimits

_ACTION_FORMS = (
    'an action is {"text": "<model output>"} or an OpenAI assistant message '
    '{"content": "...", "tool_calls": [...]}'
)


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def parse_json(raw: str | bytes, limits: ServerLimits, what: str = "body") -> Any:
    """Decode ``raw`` as JSON no deeper than ``limits.max_json_depth``."""
    try:
        data = loads(raw)
    except RecursionError:
        raise InvalidJSON(
            f"the JSON {what} is nested too deeply (the limit is "
            f"{limits.max_json_depth} levels of objects/arrays)",
            what,
        ) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidJSON(f"invalid JSON in the {what}: {exc}", what) from exc
    where = (
        None if _few_brackets(raw, limits.max_json_depth) else too_deep(data, limits.max_json_depth)
    )
    if where is not None:
        field = where or what
        raise InvalidJSON(
            f"{field} is nested more than {limits.max_json_depth} levels deep "
            "(objects/arrays); flatten it",
            field,
        )
    return data


def _few_brackets(raw: str | bytes, limit: int) -> bool:
    """True when ``raw`` holds at most ``limit`` opening brackets, so no value in it can be
    nested deeper than ``limit`` (a message of a few fields skips the walk of the tree)."""
    if isinstance(raw, str):
        return raw.count("[") + raw.count("{") <= limit
    return raw.count(b"[") + raw.count(b"{") <= limit


def too_deep(data: Any, limit: int) -> str | None:
    """The path of the first value nested deeper than ``limit``, or None (iterative)."""
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, dict):
            items: Any = ((f"{path}.{k}" if path else str(k), v) for k, v in value.items())
        elif isinstance(value, list):
            items = ((f"{path}[{i}]", v) for i, v in enumerate(value))
        else:
            continue
        if depth >= limit:
            return path
        stack.extend((v, p, depth + 1) for p, v in items)
    return None


def reset_args(data: Any, prefix: str = "") -> tuple[int | None, dict[str, Any] | None]:
    """``seed`` and ``options`` (with ``task_id`` folded in) from a reset request."""
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise BadRequest(
            f"reset data must be a JSON object, got {_kind(data)}", prefix.rstrip(".") or "body"
        )
    seed = data.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0):
        raise BadRequest(
            f"seed must be a non-negative integer or null, got {seed!r}"[:300], prefix + "seed"
        )
    raw_options = data.get("options")
    if raw_options is not None and not isinstance(raw_options, Mapping):
        raise BadRequest(
            f'options must be a JSON object (e.g. {{"task_id": "..."}}) or null, '
            f"got {_kind(raw_options)}: {json.dumps(raw_options)[:80]}",
            prefix + "options",
        )
    options = dict(raw_options or {})
    task_id = data.get("task_id")
    if task_id is not None:
        if not isinstance(task_id, str | int) or isinstance(task_id, bool):
            raise BadRequest(f"task_id must be a string, got {_kind(task_id)}", prefix + "task_id")
        options["task_id"] = task_id
    return seed, options or None


EPISODE_ID_RULE = (
    "episode_id must be 1..255 printable ASCII characters (letters, digits and punctuation "
    "!-~; no spaces, control characters or non-ASCII), because it is sent back in the "
    "X-Agentgym-Episode-Id header"
)


def episode_id(value: Any) -> str | None:
    """A client-chosen session name: None, or 1..255 printable ASCII characters.

    Checked before any session is built, because the id is echoed in a response header:
    ``\\n``, ``\\r`` or NUL would make the reply illegal (the connection dropped after the env
    ran) and non-ASCII has no header encoding. The refusal names the rule.

    Examples:
        >>> episode_id("worker-1/ep:7")
        'worker-1/ep:7'
        >>> try:
        ...     episode_id("a\\nb")
        ... except BadRequest as exc:
        ...     print(exc.status, exc.field)
        400 episode_id
    """
    if value is None:
        return None
    ok = isinstance(value, str) and 0 < len(value) <= 255 and value.isascii()
    if not ok or not all("!" <= c <= "~" for c in value):
        raise BadRequest(
            f"{EPISODE_ID_RULE}; got {_kind(value)} {json.dumps(value, default=str)[:60]}",
            "episode_id",
        )
    return value


def action(data: Any, limits: ServerLimits, field: str = "action") -> str | dict[str, Any]:
    """The assistant turn inside an OpenEnv action: text, or an OpenAI assistant message.

    Examples:
        >>> limits = ServerLimits()
        >>> action({"text": "hi"}, limits)
        'hi'
        >>> try:
        ...     action({"content": "", "tool_calls": 5}, limits)
        ... except BadRequest as exc:
        ...     print(exc.status, exc.field)
        400 action.tool_calls
    """
    if isinstance(data, str):
        turn: str | dict[str, Any] = data
    elif isinstance(data, Mapping):
        if "message" in data:
            if not isinstance(data["message"], Mapping):
                raise BadRequest(
                    f"{field}.message must be an OpenAI assistant message object, got "
                    f"{_kind(data['message'])}",
                    f"{field}.message",
                )
            data, field = data["message"], f"{field}.message"
        turn = _turn(data, field)
    else:
        raise BadRequest(f"{_ACTION_FORMS}; {field} is {_kind(data)}", field)
    size = len(turn) if isinstance(turn, str) else len(json.dumps(turn, default=str))
    if size > limits.max_action_chars:
        raise RequestTooLarge(
            f"{field} holds {size} characters; this server accepts at most "
            f"{limits.max_action_chars} (agentgym serve --max-action-chars)",
            field,
        )
    return turn


def _turn(data: Mapping[str, Any], field: str) -> str | dict[str, Any]:
    has_message = data.get("tool_calls") is not None or data.get("content") is not None
    if "text" in data:
        if has_message:
            raise BadRequest(
                f"{field} has both text and content/tool_calls; send one form", f"{field}.text"
            )
        if not isinstance(data["text"], str):
            raise BadRequest(
                f"{field}.text must be a string, got {_kind(data['text'])}", f"{field}.text"
            )
        return data["text"]
    if "tool_calls" not in data and "content" not in data:
        raise BadRequest(f"{_ACTION_FORMS}; got keys {sorted(map(str, data))!r}"[:300], field)
    content = data.get("content")
    parts_ok = isinstance(content, list) and all(isinstance(p, Mapping) for p in content)
    if content is not None and not isinstance(content, str) and not parts_ok:
        raise BadRequest(
            f"{field}.content must be a string, null or a list of content-part objects, "
            f"got {_kind(content)}",
            f"{field}.content",
        )
    calls = data.get("tool_calls")
    if calls is None:
        calls = []
    if not isinstance(calls, list):
        raise BadRequest(
            f"{field}.tool_calls must be a list of tool-call objects (or null), got "
            f"{_kind(calls)}: {json.dumps(calls, default=str)[:80]}",
            f"{field}.tool_calls",
        )
    for i, call in enumerate(calls):
        if not isinstance(call, Mapping):
            raise BadRequest(
                f'{field}.tool_calls[{i}] must be an object like {{"id": ..., "type": '
                f'"function", "function": {{"name": ..., "arguments": ...}}}}, got {_kind(call)}',
                f"{field}.tool_calls[{i}]",
            )
    return {"content": content, "tool_calls": list(calls)}
