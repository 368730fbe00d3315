"""Readers for users' own code tasks: HumanEval and MBPP files, as published.

=================  =====================================================================
format             fields read (JSON lines; HumanEval's ``.jsonl.gz`` read as is)
=================  =====================================================================
HumanEval          ``task_id``, ``prompt`` (signature and docstring), ``canonical_solution``
                   (the body), ``test`` (a ``check(candidate)`` function), ``entry_point``
MBPP               ``task_id``, ``text``, ``code``, ``test_list`` (assert lines),
                   ``test_setup_code``, ``challenge_test_list``
MBPP (sanitized)   ``task_id``, ``prompt``, ``code``, ``test_list``, ``test_imports``
=================  =====================================================================

Each record becomes a :class:`CodeTask`: the text the model reads, the reference solution,
and two test programs. HumanEval's public tests are the prompt's doctest examples (each
``>>> call`` with its printed result, as ``assert call == result``); its hidden program is
``test`` followed by ``check(<entry_point>)``. MBPP's first assert is public (the model is
shown it, as in MBPP's own prompt: it names the function and how it is called); the hidden
program is the setup code and every assert of ``test_list`` and ``challenge_test_list``.

A file whose first record is not in the format its fields point to is refused with one line
naming the format expected and the first field that did not match; later malformed records
(bad JSON, a missing or mistyped field, code that does not parse, a repeated id) are skipped
and counted.
"""

from __future__ import annotations

import ast
import doctest
import gzip
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from agentgym.datafiles import BAD_LINE, RecordMismatch, json_lines, read_with_digest, require
from agentgym.error import InvalidConfigError

FORMAT_NAMES = {
    "humaneval": "HumanEval JSONL",
    "mbpp": "MBPP JSONL",
    "mbpp-sanitized": "MBPP (sanitized) JSON/JSONL",
}


class TaskFormatError(InvalidConfigError):
    """A task file that is not in the format it was expected to be in (one-line message)."""


@dataclass(frozen=True)
class CodeTask:
    """One task of a user's file, in the form every format is read into."""

    id: str
    format: str
    entry_point: str
    #: What the model is asked (HumanEval: the prompt code; MBPP: the task text).
    instruction: str
    #: The reference solution, whole (HumanEval: prompt + canonical_solution).
    solution: str
    #: Public assert statements (may be empty) and the hidden test program.
    public_program: str
    hidden_program: str
    #: The public asserts as the model is shown them.
    shown_tests: tuple[str, ...] = ()


@dataclass
class CodeTaskFile:
    """The tasks read from one file, with where they came from."""

    path: str
    format: str
    sha256: str
    tasks: list[CodeTask]
    skipped: dict[str, int] = field(default_factory=dict)


def _lines(record: Any, name: str) -> list[str]:
    value = require(record, name, list, "a list of strings")
    if not all(isinstance(v, str) for v in value):
        raise RecordMismatch(f"field {name!r} is not a list of strings")
    return value


def _parses(source: str, name: str) -> None:
    try:
        ast.parse(source)
    except (SyntaxError, ValueError) as exc:
        raise RecordMismatch(f"field {name!r} is not valid Python ({exc})") from None


def doctest_asserts(prompt: str, entry: str) -> list[str]:
    """The prompt's ``>>>`` examples that call ``entry`` and show a value, as asserts.

    >>> doctest_asserts('def f(x):\\n    \"\"\"\\n    >>> f(2)  # two\\n    4\\n    \"\"\"\\n', "f")
    ['assert f(2) == 4']
    """
    try:
        tree = ast.parse(prompt)
    except (SyntaxError, ValueError):
        return []
    docs = [
        ast.get_docstring(n) or ""
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == entry
    ]
    out = []
    for ex in doctest.DocTestParser().get_examples("\n".join(docs)):
        try:
            call = ast.parse(ex.source.strip(), mode="eval").body
            want = ast.parse(ex.want.strip(), mode="eval").body
        except (SyntaxError, ValueError):
            continue
        names = {
            n.func.id
            for n in ast.walk(call)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
        }
        if entry in names and "\n" not in ex.want.strip():
            # rebuilt from the syntax tree: no trailing comment swallows "== want", and
            # parentheses go where precedence needs them
            test = ast.Compare(left=call, ops=[ast.Eq()], comparators=[want])
            out.append(ast.unparse(ast.Assert(test=test, msg=None)))
    return out


def _humaneval(record: Any) -> CodeTask:
    tid = require(record, "task_id", str, "a string")
    prompt = require(record, "prompt", str, "a string")
    body = require(record, "canonical_solution", str, "a string")
    test = require(record, "test", str, "a string")
    entry = require(record, "entry_point", str, "a string")
    if not entry.isidentifier():
        raise RecordMismatch("field 'entry_point' is not a Python name")
    solution = prompt + body
    _parses(solution, "canonical_solution")
    hidden = f"{test}\n\ncheck({entry})\n"
    _parses(hidden, "test")
    shown = doctest_asserts(prompt, entry)
    return CodeTask(
        tid, "humaneval", entry, prompt, solution, "\n".join(shown), hidden, tuple(shown)
    )


def _called_function(code: str, test: str) -> str:
    """The function an MBPP assert tests: the first name it calls that ``code`` defines."""
    defined = {
        n.name
        for n in ast.parse(code).body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    try:
        tree = ast.parse(test)
    except SyntaxError:
        raise RecordMismatch("field 'test_list' holds a line that is not valid Python") from None
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in defined
        ):
            return node.func.id
    raise RecordMismatch("the first test calls no function that 'code' defines")


def _mbpp_task(tid: str, fmt: str, text: str, code: str, setup: str, tests: list[str]) -> CodeTask:
    code = code.replace("\r\n", "\n")
    setup = setup.replace("\r\n", "\n")
    _parses(code, "code")
    if not tests:
        raise RecordMismatch("field 'test_list' is empty")
    entry = _called_function(code, tests[0])
    public = f"{setup}\n{tests[0]}\n"
    hidden = setup + "\n" + "\n".join(tests) + "\n"
    _parses(hidden, "test_list")
    return CodeTask(tid, fmt, entry, text, code, public, hidden, (tests[0],))


def _mbpp(record: Any) -> CodeTask:
    tid = str(require(record, "task_id", (int, str), "an integer id"))
    text = require(record, "text", str, "a string")
    code = require(record, "code", str, "a string")
    tests = _lines(record, "test_list")
    setup = require(record, "test_setup_code", str, "a string")
    challenge = _lines(record, "challenge_test_list") if "challenge_test_list" in record else []
    return _mbpp_task(tid, "mbpp", text, code, setup, tests + challenge)


def _mbpp_sanitized(record: Any) -> CodeTask:
    tid = str(require(record, "task_id", (int, str), "an integer id"))
    text = require(record, "prompt", str, "a string")
    code = require(record, "code", str, "a string")
    tests = _lines(record, "test_list")
    imports = _lines(record, "test_imports")
    return _mbpp_task(tid, "mbpp-sanitized", text, code, "\n".join(imports), tests)


_FORMATS: dict[str, tuple[str, tuple[str, ...], Callable[[Any], CodeTask]]] = {
    # name: (marker field, fields, reader)
    "humaneval": ("canonical_solution", ("task_id", "prompt", "canonical_solution", "test", "entry_point"), _humaneval),
    "mbpp": ("test_setup_code", ("task_id", "text", "code", "test_list", "test_setup_code"), _mbpp),
    "mbpp-sanitized": ("test_imports", ("task_id", "prompt", "code", "test_list", "test_imports"), _mbpp_sanitized),
}  # fmt: skip


def _pick(first: Any) -> str:
    if isinstance(first, dict):
        for name, (marker, _, _) in _FORMATS.items():
            if marker in first:
                return name
        return min(_FORMATS, key=lambda n: sum(f not in first for f in _FORMATS[n][1]))
    return "humaneval"


def _records(text: str) -> Iterator[tuple[int, Any]]:
    stripped = text.lstrip()
    if stripped.startswith("["):  # MBPP sanitized ships as one JSON list
        try:
            data = json.loads(text)
        except ValueError:
            yield 1, BAD_LINE
            return
        yield from enumerate(data if isinstance(data, list) else [data], 1)
        return
    yield from json_lines(text)


def read_tasks(path: str | os.PathLike[str]) -> CodeTaskFile:
    """Read a HumanEval or MBPP task file; refuse anything else in one line."""
    path, raw, digest = read_with_digest(path, "tasks")
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise TaskFormatError(f"{path}: not a task file: a damaged gzip file ({exc})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TaskFormatError(
            f"{path}: not a task file: expected UTF-8 JSON lines (HumanEval, MBPP), got a byte "
            f"that is not UTF-8 at offset {exc.start}"
        ) from None
    return _convert(path, digest, _records(text))


def _convert(path: str, digest: str, items: Iterator[tuple[int, Any]]) -> CodeTaskFile:
    out = CodeTaskFile(path, "", digest, [])
    seen: set[str] = set()
    for number, item in items:
        if not out.format:
            if item is BAD_LINE:
                raise TaskFormatError(
                    f"{path}: not a task file: expected JSON lines (HumanEval, MBPP), but line "
                    f"{number} is not JSON"
                )
            out.format = _pick(item)
        _, fields, reader = _FORMATS[out.format]
        try:
            if item is BAD_LINE:
                raise RecordMismatch("is not JSON")
            task = reader(item)
        except RecordMismatch as exc:
            if not out.tasks and not out.skipped:
                raise TaskFormatError(
                    f"{path}: not {FORMAT_NAMES[out.format]}: record {number} {exc} "
                    f"(expected fields: {', '.join(fields)})"
                ) from None
            out.skipped["malformed"] = out.skipped.get("malformed", 0) + 1
            continue
        if task.id in seen:
            out.skipped["duplicate id"] = out.skipped.get("duplicate id", 0) + 1
            continue
        seen.add(task.id)
        out.tasks.append(task)
    if not out.tasks:
        raise TaskFormatError(f"{path}: not a task file: expected at least one task, found none")
    return out
