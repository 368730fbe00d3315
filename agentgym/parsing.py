"""The one tool-call parser of the suite.

A model turn is a string. It may hold, in any order:

* tool calls in the Hermes/Qwen form ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
  (several per turn are allowed; ``arguments`` may also be a JSON-encoded string, as OpenAI
  sends it);
* one final answer ``<answer>...</answer>``;
* free text around them (reasoning, ``<think>`` blocks), kept as ``ParsedAction.text``.

Adapters that receive structured OpenAI ``tool_calls`` objects turn them into the same
``ParsedAction`` with :func:`parse_openai_tool_calls`, or into canonical text with
:func:`render_tool_calls` so that ``env.step`` still takes one string.

Envs declare their tools as :class:`Tool` (a JSON schema per tool) and receive validated
calls; they never parse text themselves. The parser never raises: every problem becomes an
entry of ``ParsedAction.errors`` written for the model to read and fix.

Examples:
    >>> move = Tool("move", "Move one cell.", {"type": "object",
    ...     "properties": {"direction": {"enum": ["up", "down"]}}, "required": ["direction"]})
    >>> a = parse_action('<tool_call>{"name": "move", "arguments": {"direction": "up"}}</tool_call>', [move])
    >>> a.valid, a.tool_calls[0].arguments
    (True, {'direction': 'up'})
    >>> parse_action('<tool_call>{"name": "mve", "arguments": {}}</tool_call>', [move]).errors[0]
    "tool call 1: unknown tool 'mve'. Did you mean 'move'? Available tools: move."
"""

from __future__ import annotations

import copy
import difflib
import inspect
import json
import logging
import re
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import jsonschema

logger = logging.getLogger(__name__)

__all__ = [
    "ANSWER_TOOL",
    "ANSWER_TOOL_NOTE",
    "MAX_JSON_DEPTH",
    "ParsedAction",
    "Tool",
    "ToolCall",
    "fold_answer_calls",
    "parse_action",
    "parse_openai_tool_calls",
    "render_answer",
    "render_tool_call",
    "render_tool_calls",
    "tool_from_function",
]

#: How much of an offending value is quoted back in an error message.
_QUOTE_LIMIT = 80

_FENCE_RE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)

MAX_JSON_DEPTH = 64
"""Deepest nesting of arrays and objects a tool call may have (the call object counts as 1).

Checked before ``json.loads`` by a scan that does not recurse, so the answer never depends on
how deep in the stack the caller is: ``json.loads``, schema validation and copies recurse
once per level, and a call 985 levels deep used to parse from a script, fail from a thread
600 frames deeper, and raise ``RecursionError`` near the interpreter's limit. 64 levels
leave those steps far inside any recursion limit; real tool arguments need a handful.
"""

#: A JSON string (skipped whole, escapes included) or one bracket.
_JSON_TOKEN_RE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def _json_too_deep(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when the JSON ``text`` nests arrays/objects more than ``limit`` levels deep.

    Iterative: the same answer at any stack depth. Brackets inside strings do not count.
    """
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    for match in _JSON_TOKEN_RE.finditer(text):
        char = match.group()[0]
        if char in "[{":
            depth += 1
            if depth > limit:
                return True
        elif char in "]}":
            depth = max(0, depth - 1)
    return False


def _value_too_deep(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Like :func:`_json_too_deep` for a decoded value (dicts, lists, tuples), iteratively."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _too_deep_error(where: str) -> str:
    return (
        f"{where}: JSON nested more than {MAX_JSON_DEPTH} levels deep; "
        "tool arguments must be flatter."
    )


@dataclass(frozen=True)
class Tool:
    """A tool an env offers: its name, what it does, and a JSON schema of its arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI function-calling schema (what ``reset`` puts in ``info["tools"]``)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": _thaw(self.parameters),
            },
        }

    def __hash__(self) -> int:
        return hash((self.name, self.description))

    @cached_property
    def validator(self) -> Any:
        """The JSON-schema validator of the arguments, built once per tool."""
        schema = _thaw(self.parameters)
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        return cls(schema)

    @cached_property
    def known_valid(self) -> dict[str, None]:
        """Canonical JSON of argument sets this tool already accepted (a bounded memo).

        Agents repeat the same calls constantly (moves, clicks), and schema validation is
        most of a step's parsing cost; an exact key makes a repeat a dict lookup.
        """
        return {}


@dataclass(frozen=True)
class ToolCall:
    """One validated call: the tool's name and its arguments."""

    name: str
    arguments: dict[str, Any]
    id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{"name", "arguments", "id"}`` with the arguments copied (as ``info`` carries it)."""
        return {"name": self.name, "arguments": _copy_arguments(self.arguments), "id": self.id}

    def to_openai(self) -> dict[str, Any]:
        return {
            "id": self.id or "",
            "type": "function",
            "function": {"name": self.name, "arguments": json.dumps(self.arguments)},
        }


@dataclass(frozen=True)
class ParsedAction:
    """What a model turn said, after parsing and validation.

    ``tool_calls`` holds only the calls that validated; ``errors`` explains every part that
    did not. ``valid`` is true when nothing was wrong.
    """

    raw: str
    tool_calls: tuple[ToolCall, ...] = ()
    answer: str | None = None
    text: str = ""
    errors: tuple[str, ...] = ()

    @property
    def valid(self) -> bool:
        return not self.errors

    @property
    def empty(self) -> bool:
        """True when the turn held neither a tool call nor an answer."""
        return not self.tool_calls and self.answer is None

    def error_text(self) -> str:
        """All errors as one message for an observation (empty string when valid)."""
        return "\n".join(self.errors)


def _thaw(obj: Any) -> Any:
    """``obj`` with every mapping made a fresh dict and every sequence a fresh list."""
    if isinstance(obj, str | int | float) or obj is None:  # most values: no ABC check
        return obj
    if isinstance(obj, Mapping):
        return {k: _thaw(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_thaw(v) for v in obj]
    return obj


def _quote(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    if len(text) > _QUOTE_LIMIT:
        text = text[:_QUOTE_LIMIT] + "..."
    return repr(text)


_MEMO_KEY_LIMIT = 512  # longer argument sets are validated every time
_MEMO_SIZE = 4096  # per tool; the memo is emptied when full


def _schema_error(tool: Tool, arguments: dict[str, Any], *, json_typed: bool) -> str | None:
    """A one-line description of what is wrong with ``arguments``, or None if they fit.

    ``json_typed`` says the arguments came out of ``json.loads`` (only JSON types inside), so
    their canonical JSON text is an exact memo key; a tuple passed in by code could dump like
    a list yet fail an ``array`` check, so such arguments are never memoised.
    """
    key = None
    if json_typed:
        try:
            key = json.dumps(arguments, sort_keys=True, separators=(",", ":"))
        except (ValueError, RecursionError):
            key = None
        if key in tool.known_valid:
            return None
    validator = tool.validator
    if validator.is_valid(arguments):
        if key is not None and len(key) <= _MEMO_KEY_LIMIT:
            if len(tool.known_valid) >= _MEMO_SIZE:
                tool.known_valid.clear()
            tool.known_valid[key] = None
        return None
    err = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
    if err is None:
        return None
    where = ".".join(str(p) for p in err.absolute_path)
    if err.validator == "required":
        return f"{err.message}"
    if err.validator == "additionalProperties":
        allowed = ", ".join(sorted(_thaw(tool.parameters).get("properties", {}))) or "none"
        return f"{err.message} (allowed arguments: {allowed})"
    subject = f"argument '{where}'" if where else "arguments"
    message = err.message
    if len(message) > 200:
        message = message[:200] + "..."
    return f"{subject}: {message}"


def _check_call(
    obj: Any, tools_by_name: Mapping[str, Tool], where: str, *, json_typed: bool = False
) -> tuple[ToolCall | None, str | None]:
    if not json_typed and _value_too_deep(obj):  # structured calls from adapters
        return None, _too_deep_error(where)
    if not isinstance(obj, dict):
        return None, (
            f"{where}: expected a JSON object like "
            '{"name": "tool_name", "arguments": {...}}, '
            f"got {type(obj).__name__} {_quote(obj)}."
        )
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        return None, f'{where}: missing "name" (a string naming the tool).'
    args: Any = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        json_typed = True
        if _json_too_deep(args, MAX_JSON_DEPTH - 1):  # one level below the call object
            return None, _too_deep_error(where)
        try:
            args = json.loads(args) if args.strip() else {}
        except (ValueError, RecursionError) as exc:
            return None, f'{where}: "arguments" is a string that is not valid JSON ({exc}).'
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return None, f'{where}: "arguments" must be a JSON object, got {type(args).__name__}.'
    tool = tools_by_name.get(name)
    if tool is None:
        known = sorted(tools_by_name)
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        listing = ", ".join(known) if known else "none (this env takes no tool calls)"
        return None, f"{where}: unknown tool {_quote(name)}.{hint} Available tools: {listing}."
    problem = _schema_error(tool, args, json_typed=json_typed)
    if problem is not None:
        return None, f"{where} ({name}): {problem}."
    call_id = obj.get("id") if isinstance(obj.get("id"), str) else None
    return ToolCall(name=name, arguments=args, id=call_id), None


def _split_tagged(text: str, tag: str) -> tuple[list[str], str, bool]:
    """Bodies of ``<tag>...</tag>`` blocks, the text outside them, and whether one is unclosed.

    A linear scan with ``str.find`` (a lazy regex is quadratic on many unclosed tags).
    """
    open_tag, close_tag = f"<{tag}>", f"</{tag}>"
    bodies: list[str] = []
    outside: list[str] = []
    pos = 0
    unclosed = False
    while True:
        start = text.find(open_tag, pos)
        if start < 0:
            outside.append(text[pos:])
            break
        end = text.find(close_tag, start + len(open_tag))
        if end < 0:
            unclosed = True
            outside.append(text[pos:start])
            break
        outside.append(text[pos:start])
        bodies.append(text[start + len(open_tag) : end])
        pos = end + len(close_tag)
    return bodies, " ".join(outside), unclosed


def _parse_text(text: str, tools: Sequence[Tool], max_calls: int) -> ParsedAction:
    tools_by_name = {t.name: t for t in tools}
    errors: list[str] = []
    calls: list[ToolCall] = []

    bodies, rest, unclosed = _split_tagged(text, "tool_call")
    if unclosed:
        errors.append("a <tool_call> tag is not closed: end each call with </tool_call>.")
    if len(bodies) > max_calls:
        errors.append(f"{len(bodies)} tool calls in one turn; at most {max_calls} are allowed.")
        bodies = bodies[:max_calls]
    for i, body in enumerate(bodies, start=1):
        where = f"tool call {i}"
        fenced = _FENCE_RE.match(body) if body.lstrip().startswith("```") else None
        payload = fenced.group(1) if fenced else body.strip()
        if not payload:
            errors.append(f"{where}: empty <tool_call> block.")
            continue
        if _json_too_deep(payload):
            errors.append(_too_deep_error(where))
            continue
        try:
            obj = json.loads(payload)
        except RecursionError:  # only when the caller is already near the recursion limit
            errors.append(_too_deep_error(where))
            continue
        except ValueError as exc:
            errors.append(f"{where}: invalid JSON ({exc}).")
            continue
        call, err = _check_call(obj, tools_by_name, where, json_typed=True)
        if err:
            errors.append(err)
        elif call is not None:
            calls.append(call)

    answers, rest, unclosed = _split_tagged(rest, "answer")
    if unclosed:
        errors.append("an <answer> tag is not closed: end it with </answer>.")
    answer: str | None = None
    if len(answers) > 1:
        errors.append(f"{len(answers)} <answer> blocks; give exactly one.")
    if answers:
        answer = answers[-1].strip()

    return ParsedAction(
        raw=text,
        tool_calls=tuple(calls),
        answer=answer,
        text=" ".join(rest.split()),
        errors=tuple(errors),
    )


_PARSE_MEMO_TEXT_LIMIT = 1024  # longer turns are parsed every time
_PARSE_MEMO_SIZE = 4096  # entries; the memo is emptied when full
#: (action text, max_calls) -> (the tools it was parsed against, the result). Agents repeat
#: the same short bare turns constantly (moves, clicks); a repeat then costs a lookup and a
#: copy.
#: The result depends only on the text, the tools and max_calls, so the memo is exact.
_PARSE_MEMO: dict[tuple[str, int], tuple[tuple[Tool, ...], ParsedAction]] = {}


def _fresh_copy(parsed: ParsedAction) -> ParsedAction:
    """``parsed`` with its calls' arguments copied (everything else in it is immutable)."""
    if not parsed.tool_calls:
        return parsed
    calls = tuple(
        ToolCall(name=c.name, arguments=_copy_arguments(c.arguments), id=c.id)
        for c in parsed.tool_calls
    )
    return ParsedAction(
        raw=parsed.raw,
        tool_calls=calls,
        answer=parsed.answer,
        text=parsed.text,
        errors=parsed.errors,
    )


def _same_tools(a: tuple[Tool, ...], b: tuple[Tool, ...]) -> bool:
    """The very same tool objects (an equal but distinct tool has its own validator and memo)."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def _copy_arguments(args: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``args`` that shares nothing mutable with it: a shallow one when no value
    is a dict or a list (the usual case, and several times cheaper than a deep copy)."""
    for value in args.values():
        if isinstance(value, dict | list):
            return copy.deepcopy(args)
    return dict(args)


def parse_action(action: Any, tools: Sequence[Tool] = (), *, max_calls: int = 16) -> ParsedAction:
    """Parse one model turn into validated tool calls, an optional answer and free text.

    Args:
        action: The model's raw output. Anything that is not a ``str`` is reported as an
            error (bytes are decoded with replacement first, so their text still parses).
        tools: The tools the env offers; calls to any other name are errors.
        max_calls: Calls beyond this many in one turn are dropped with an error.

    Returns:
        A :class:`ParsedAction`. It never raises.
    """
    pre_errors: list[str] = []
    if isinstance(action, bytes | bytearray):
        action = bytes(action).decode("utf-8", errors="replace")
        pre_errors.append("the action was bytes, not text; decoded as UTF-8.")
    elif not isinstance(action, str):
        return ParsedAction(
            raw=repr(action)[:1000],
            errors=(f"the action must be a string, got {type(action).__name__}.",),
        )
    tools = tuple(tools)
    key = (action, max_calls)
    memo = _PARSE_MEMO.get(key) if len(action) <= _PARSE_MEMO_TEXT_LIMIT else None
    if memo is not None and _same_tools(memo[0], tools):
        parsed = _fresh_copy(memo[1])
    else:
        try:
            parsed = _parse_text(action, tools, max_calls)
        except Exception as exc:  # the parser must never raise; report and move on
            logger.warning("agentgym parser failed on an action; this is a bug", exc_info=True)
            return ParsedAction(raw=action, errors=(f"could not parse the action ({exc!r}).",))
        # Only bare turns (calls and answers, no free text) are kept: those are the ones
        # that repeat (canonical actions, admissible-action lists); a turn with reasoning
        # around its call is almost never seen twice and would only pay for the copy.
        if not parsed.text and len(action) <= _PARSE_MEMO_TEXT_LIMIT:
            if len(_PARSE_MEMO) >= _PARSE_MEMO_SIZE:
                _PARSE_MEMO.clear()
            # A private copy: the caller may edit the arguments of the calls it gets.
            _PARSE_MEMO[key] = (tools, _fresh_copy(parsed))
    if pre_errors:
        parsed = ParsedAction(
            raw=parsed.raw,
            tool_calls=parsed.tool_calls,
            answer=parsed.answer,
            text=parsed.text,
            errors=tuple(pre_errors) + parsed.errors,
        )
    return parsed


def parse_openai_tool_calls(
    tool_calls: Any, tools: Sequence[Tool] = (), *, content: str = ""
) -> ParsedAction:
    """Validate structured OpenAI ``tool_calls`` (as adapters receive them).

    Each item is ``{"id": ..., "type": "function", "function": {"name": ..., "arguments":
    "<json string>"}}``; the inner ``function`` dict alone is accepted too. ``content`` is the
    message text that came with them; an ``<answer>`` inside it is picked up.
    """
    base = parse_action(content if isinstance(content, str) else "", tools)
    if not isinstance(tool_calls, list | tuple):
        return ParsedAction(
            raw=base.raw,
            answer=base.answer,
            text=base.text,
            errors=(*base.errors, "tool_calls must be a list of tool-call objects."),
        )
    tools_by_name = {t.name: t for t in tools}
    calls = list(base.tool_calls)
    errors = list(base.errors)
    for i, item in enumerate(tool_calls, start=1):
        obj = item.get("function", item) if isinstance(item, dict) else item
        if isinstance(obj, dict) and isinstance(item, dict) and "id" in item:
            obj = {**obj, "id": item["id"]}
        try:
            call, err = _check_call(obj, tools_by_name, f"tool call {i}")
        except Exception as exc:  # never raise
            call, err = None, f"tool call {i}: could not be read ({exc!r})."
        if err:
            errors.append(err)
        elif call is not None:
            calls.append(call)
    raw = base.raw + render_tool_calls(calls)
    return ParsedAction(
        raw=raw, tool_calls=tuple(calls), answer=base.answer, text=base.text, errors=tuple(errors)
    )


_CLOSE_ESCAPED = "<\\/"


def tool_call_block(json_text: str) -> str:
    """``json_text`` (one call as JSON) in a ``<tool_call>`` block its content cannot end.

    In JSON text ``</`` can only occur inside a string, where ``<\\/`` is the same string
    (``\\/`` is JSON's escape for ``/``). Written so, an argument that holds
    ``</tool_call>`` (code, HTML, a model quoting the format) is read back whole; written
    raw, the parser cut the call there and charged the model a format error for it.

    >>> tool_call_block('{"name": "echo", "arguments": {"text": "</tool_call>"}}')
    '<tool_call>{"name": "echo", "arguments": {"text": "<\\\\/tool_call>"}}</tool_call>'
    """
    return f"<tool_call>{json_text.replace('</', _CLOSE_ESCAPED)}</tool_call>"


def render_tool_call(name: str, arguments: Mapping[str, Any] | None = None) -> str:
    """The canonical text form of one call, exactly what the parser reads back, whatever its
    arguments hold (see :func:`tool_call_block`).

    >>> render_tool_call("move", {"direction": "up"})
    '<tool_call>{"name": "move", "arguments": {"direction": "up"}}</tool_call>'
    """
    payload = {"name": name, "arguments": dict(arguments or {})}
    return tool_call_block(json.dumps(payload, ensure_ascii=False))


def render_tool_calls(calls: Sequence[ToolCall]) -> str:
    """Several calls in canonical text form, one per line."""
    return "\n".join(render_tool_call(c.name, c.arguments) for c in calls)


def render_answer(answer: str) -> str:
    """The canonical text form of a final answer.

    >>> render_answer("42")
    '<answer>42</answer>'
    """
    return f"<answer>{answer}</answer>"


# --- the answer tool ----------------------------------------------------------------------

ANSWER_TOOL = Tool(
    "answer",
    "Give your final answer. This ends the episode; call it once, when you are sure.",
    {
        "type": "object",
        "properties": {"answer": {"type": "string", "description": "Your final answer."}},
        "required": ["answer"],
        "additionalProperties": False,
    },
)
"""The tool form of ``<answer>...</answer>``, for frameworks that carry only tool calls.

An env built with ``answer_tool=True`` offers it next to its own tools; a call to it is
folded into :attr:`ParsedAction.answer` by :func:`fold_answer_calls`, so the env sees
exactly what an ``<answer>`` block would have given it.
"""

ANSWER_TOOL_NOTE = (
    "You may also give the final answer by calling the `answer` tool "
    '(arguments {"answer": "..."}) instead of writing <answer>...</answer>.'
)
"""The line appended to the system prompt of an env that offers :data:`ANSWER_TOOL`."""


def fold_answer_calls(parsed: ParsedAction) -> ParsedAction:
    """Turn calls to the ``answer`` tool into the parsed answer (the ``<answer>`` form).

    One answer per turn, by either channel: a second one (two calls, or a call and an
    ``<answer>`` block) is an error, and the last one given is kept, as with two blocks.

    >>> a = parse_action('<tool_call>{"name": "answer", "arguments": {"answer": "4"}}</tool_call>',
    ...                  [ANSWER_TOOL])
    >>> b = fold_answer_calls(a)
    >>> b.answer, b.tool_calls, b.valid
    ('4', (), True)
    """
    answers = [c for c in parsed.tool_calls if c.name == ANSWER_TOOL.name]
    if not answers:
        return parsed
    errors = list(parsed.errors)
    given = len(answers) + (parsed.answer is not None)
    if given > 1:
        errors.append(
            f"{given} answers in one turn (answer tool calls and <answer> blocks); give exactly one."
        )
    return ParsedAction(
        raw=parsed.raw,
        tool_calls=tuple(c for c in parsed.tool_calls if c.name != ANSWER_TOOL.name),
        answer=str(answers[-1].arguments["answer"]),
        text=parsed.text,
        errors=tuple(errors),
    )


# --- tools from plain functions ------------------------------------------------------------

_JSON_TYPES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _annotation_schema(annotation: Any) -> dict[str, Any]:
    origin = typing.get_origin(annotation)
    if annotation in _JSON_TYPES:
        return {"type": _JSON_TYPES[annotation]}
    if origin is typing.Literal:
        return {"enum": list(typing.get_args(annotation))}
    if origin in (list, tuple, Sequence):
        args = [a for a in typing.get_args(annotation) if a is not Ellipsis]
        schema: dict[str, Any] = {"type": "array"}
        if args:
            schema["items"] = _annotation_schema(args[0])
        if origin is tuple and args and Ellipsis not in typing.get_args(annotation):
            schema["minItems"] = schema["maxItems"] = len(typing.get_args(annotation))
        return schema
    if origin in (dict, Mapping):
        return {"type": "object"}
    return {}


def _docstring_args(doc: str) -> dict[str, str]:
    """Argument descriptions from a Google-style ``Args:`` section."""
    out: dict[str, str] = {}
    in_args = False
    current = None
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped in ("Args:", "Arguments:"):
            in_args = True
            continue
        if in_args:
            if stripped.endswith(":") and " " not in stripped:
                break  # the next section
            m = re.match(r"^(\w+)\s*(\([^)]*\))?:\s*(.*)$", stripped)
            if m:
                current = m.group(1)
                out[current] = m.group(3)
            elif current and stripped:
                out[current] += " " + stripped
            elif not stripped and out:
                break
    return out


def tool_from_function(fn: Callable[..., Any], name: str | None = None) -> Tool:
    """Build a :class:`Tool` from a function's signature and Google-style docstring.

    The model then reads exactly what developers read (one source of truth).

    Examples:
        >>> def zoom(x: int, y: int, factor: float = 2.0) -> None:
        ...     '''Zoom into the image around a point.
        ...
        ...     Args:
        ...         x: Column in pixels.
        ...         y: Row in pixels.
        ...         factor: How much to magnify.
        ...     '''
        >>> t = tool_from_function(zoom)
        >>> t.name, t.parameters["required"], t.parameters["properties"]["x"]
        ('zoom', ['x', 'y'], {'type': 'integer', 'description': 'Column in pixels.'})
    """
    doc = inspect.getdoc(fn) or ""
    summary = doc.split("\n\n")[0].replace("\n", " ").strip()
    arg_docs = _docstring_args(doc)
    hints = typing.get_type_hints(fn)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for pname, param in inspect.signature(fn).parameters.items():
        if pname in ("self", "cls") or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        schema = _annotation_schema(hints.get(pname, Any))
        if pname in arg_docs:
            schema["description"] = arg_docs[pname]
        if param.default is inspect.Parameter.empty:
            required.append(pname)
        else:
            schema["default"] = param.default
        properties[pname] = schema
    params = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    return Tool(name=name or fn.__name__, description=summary, parameters=params)
