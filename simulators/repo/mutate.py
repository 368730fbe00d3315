"""The bug injector: small, realistic edits to a project's source (SWE-smith's method).

:func:`find_edits` lists every place in a module where one of the operators below applies,
as :class:`Edit` objects (a text span, the text it holds and the text that replaces it).
:func:`apply_edits` applies a set of non-overlapping edits and checks that each span still
holds the text it expects, so a task table built against other sources fails loudly.

Operators (the ``kind`` of an edit):

* ``comparison`` — ``<`` and ``<=``, ``>`` and ``>=``, ``==`` and ``!=``, ``in`` and
  ``not in``, ``is`` and ``is not`` swapped;
* ``operator`` — ``+``/``-``, ``*``/``/``, ``//``/``/`` and ``+=``/``-=`` swapped;
* ``boolean`` — ``and``/``or`` swapped, ``True``/``False`` flipped;
* ``off_by_one`` — an integer constant one more or one less;
* ``constant`` — another number constant changed by a factor of ten;
* ``negation`` — a ``not`` or unary minus dropped, or an ``if`` condition negated;
* ``removed_branch`` — an ``if`` block without ``else`` removed (often a guard);
* ``swapped_arguments`` — the first two positional arguments of a call swapped;
* ``wrong_default`` — a parameter's default value changed;
* ``missing_return`` — ``return value`` turned into a bare expression (returns None);
* ``min_max`` — ``min(...)`` and ``max(...)`` swapped.
"""

from __future__ import annotations

import ast
import contextlib
import io
import itertools
import tokenize
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from agentgym.error import InvalidConfigError

COMPARE_SWAP = {
    "<": "<=",
    "<=": "<",
    ">": ">=",
    ">=": ">",
    "==": "!=",
    "!=": "==",
    "in": "not in",
    "not in": "in",
    "is": "is not",
    "is not": "is",
}
BINOP_SWAP = {"+": "-", "-": "+", "*": "/", "/": "*", "//": "/"}
AUG_SWAP = {"+=": "-=", "-=": "+="}


class MutationError(InvalidConfigError):
    """An edit whose span no longer holds the text it expects (the sources changed)."""


@dataclass(frozen=True, order=True)
class Edit:
    """Replace ``old`` (lines ``line``..``end_line``, 1-based; columns in characters,
    0-based, end exclusive) in ``path`` with ``new``."""

    path: str
    line: int
    col: int
    end_line: int
    end_col: int
    old: str
    new: str
    kind: str

    def to_json(self) -> list:
        return [
            self.path,
            self.line,
            self.col,
            self.end_line,
            self.end_col,
            self.old,
            self.new,
            self.kind,
        ]

    @classmethod
    def from_json(cls, data: Sequence) -> Edit:
        path, line, col, end_line, end_col, old, new, kind = data
        return cls(
            str(path),
            int(line),
            int(col),
            int(end_line),
            int(end_col),
            str(old),
            str(new),
            str(kind),
        )

    def overlaps(self, other: Edit) -> bool:
        if self.path != other.path:
            return False
        return (self.line, self.col) < (other.end_line, other.end_col) and (
            other.line,
            other.col,
        ) < (self.end_line, self.end_col)


# ---- positions ---------------------------------------------------------------------------


class _Source:
    """A module's text with conversions between (line, column) and offsets."""

    def __init__(self, path: str, text: str):
        self.path = path
        self.text = text
        self.lines = text.splitlines(keepends=True)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))
        self.tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))

    def offset(self, line: int, col: int) -> int:
        if line > len(self.lines):
            return len(self.text)
        return self.starts[line - 1] + col

    def char_col(self, line: int, byte_col: int) -> int:
        """``ast`` columns count UTF-8 bytes; edits count characters."""
        raw = self.lines[line - 1].encode("utf-8")[:byte_col]
        return len(raw.decode("utf-8", "ignore"))

    def start(self, node: ast.AST) -> tuple[int, int]:
        return node.lineno, self.char_col(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def end(self, node: ast.AST) -> tuple[int, int]:
        line = node.end_lineno  # type: ignore[attr-defined]
        return line, self.char_col(line, node.end_col_offset)  # type: ignore[attr-defined]

    def segment(self, a: tuple[int, int], b: tuple[int, int]) -> str:
        return self.text[self.offset(*a) : self.offset(*b)]

    def edit(self, a: tuple[int, int], b: tuple[int, int], new: str, kind: str) -> Edit:
        return Edit(self.path, a[0], a[1], b[0], b[1], self.segment(a, b), new, kind)

    def tokens_between(self, a: tuple[int, int], b: tuple[int, int]) -> list[tokenize.TokenInfo]:
        """Operator and name tokens strictly between two positions, parentheses left out."""
        return [
            t
            for t in self.tokens
            if a <= t.start
            and t.end <= b
            and t.type in (tokenize.OP, tokenize.NAME)
            and t.string not in ("(", ")")
        ]


# ---- the operators -----------------------------------------------------------------------


def _operator_span(src: _Source, left: ast.AST, right: ast.AST) -> tuple[tuple, tuple, str]:
    toks = src.tokens_between(src.end(left), src.start(right))
    if not toks:
        raise LookupError("no operator token")
    text = " ".join(t.string for t in toks)
    return toks[0].start, toks[-1].end, text


def _comparisons(src: _Source, node: ast.Compare) -> Iterator[Edit]:
    if len(node.ops) != 1:
        return
    a, b, text = _operator_span(src, node.left, node.comparators[0])
    if text in COMPARE_SWAP:
        yield src.edit(a, b, COMPARE_SWAP[text], "comparison")


def _binops(src: _Source, node: ast.BinOp) -> Iterator[Edit]:
    a, b, text = _operator_span(src, node.left, node.right)
    if text in BINOP_SWAP:
        yield src.edit(a, b, BINOP_SWAP[text], "operator")


def _boolops(src: _Source, node: ast.BoolOp) -> Iterator[Edit]:
    if len(node.values) != 2:
        return
    a, b, text = _operator_span(src, node.values[0], node.values[1])
    if text in ("and", "or"):
        yield src.edit(a, b, "or" if text == "and" else "and", "boolean")


def _augassign(src: _Source, node: ast.AugAssign) -> Iterator[Edit]:
    a, b, text = _operator_span(src, node.target, node.value)
    if text in AUG_SWAP:
        yield src.edit(a, b, AUG_SWAP[text], "operator")


def _number(src: _Source, node: ast.Constant, in_default: bool) -> Iterator[Edit]:
    a, b = src.start(node), src.end(node)
    if src.segment(a, b) != repr(node.value):
        return  # written in another form (hex, 1_000, 1e3): leave it
    value = node.value
    if isinstance(value, bool):
        yield src.edit(a, b, repr(not value), "wrong_default" if in_default else "boolean")
    elif isinstance(value, int):
        kind = "wrong_default" if in_default else "off_by_one"
        yield src.edit(a, b, repr(value + 1), kind)
        if value > 0:
            yield src.edit(a, b, repr(value - 1), kind)
        if value >= 2 and not in_default:
            yield src.edit(a, b, repr(value * 10), "constant")
    elif isinstance(value, float) and value not in (0.0, 1.0):
        yield src.edit(a, b, repr(value * 10), "wrong_default" if in_default else "constant")


def _negations(src: _Source, node: ast.UnaryOp) -> Iterator[Edit]:
    if isinstance(node.op, ast.Not | ast.USub):
        a = src.start(node)
        b = src.start(node.operand)
        if src.segment(a, b).strip() in ("not", "-"):
            yield src.edit(a, b, "", "negation")


def _negate_if(src: _Source, node: ast.If) -> Iterator[Edit]:
    test = node.test
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return
    a, b = src.start(test), src.end(test)
    text = src.segment(a, b)
    simple = isinstance(test, ast.Name | ast.Attribute | ast.Call | ast.Subscript)
    yield src.edit(a, b, f"not {text}" if simple else f"not ({text})", "negation")


def _remove_if(src: _Source, node: ast.If, siblings: list[ast.stmt]) -> Iterator[Edit]:
    if node.orelse or len(siblings) < 2:
        return
    start_line, end_line = node.lineno, node.end_lineno or node.lineno
    # (an elif is never here: it is the only statement of its parent's orelse)
    yield src.edit((start_line, 0), (end_line + 1, 0), "", "removed_branch")


def _swap_args(src: _Source, node: ast.Call) -> Iterator[Edit]:
    args = node.args
    if len(args) < 2 or any(isinstance(x, ast.Starred) for x in args[:2]):
        return
    first, second = args[0], args[1]
    a, b = src.start(first), src.end(first)
    c, d = src.start(second), src.end(second)
    one, two, middle = src.segment(a, b), src.segment(c, d), src.segment(b, c)
    if one != two and "\n" not in middle and middle.strip() == ",":
        yield src.edit(a, d, f"{two}{middle}{one}", "swapped_arguments")


def _drop_return(src: _Source, node: ast.Return) -> Iterator[Edit]:
    if node.value is None or (isinstance(node.value, ast.Constant) and node.value.value is None):
        return
    a, b = src.start(node), src.start(node.value)
    if src.segment(a, b).strip() == "return" and a[0] == b[0]:
        yield src.edit(a, b, "", "missing_return")


def _min_max(src: _Source, node: ast.Call) -> Iterator[Edit]:
    if isinstance(node.func, ast.Name) and node.func.id in ("min", "max"):
        new = "max" if node.func.id == "min" else "min"
        yield src.edit(src.start(node.func), src.end(node.func), new, "min_max")


class _Finder(ast.NodeVisitor):
    def __init__(self, src: _Source):
        self.src = src
        self.edits: list[Edit] = []
        self.defaults: set[int] = set()

    def add(self, found: Iterator[Edit]) -> None:
        with contextlib.suppress(LookupError):  # an operator token it could not place
            self.edits.extend(found)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        return  # positions inside f-strings are unreliable before Python 3.12

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        for default in [*node.args.defaults, *node.args.kw_defaults]:
            if isinstance(default, ast.Constant):
                self.defaults.add(id(default))
        self._block(node.body)
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def _block(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.If):
                self.add(_remove_if(self.src, stmt, body))

    def generic_visit(self, node: ast.AST) -> None:
        for field_name in ("body", "orelse", "finalbody"):
            block = getattr(node, field_name, None)
            if isinstance(block, list) and not isinstance(node, ast.FunctionDef | ast.Module):
                self._block(block)
        if isinstance(node, ast.Compare):
            self.add(_comparisons(self.src, node))
        elif isinstance(node, ast.BinOp):
            self.add(_binops(self.src, node))
        elif isinstance(node, ast.BoolOp):
            self.add(_boolops(self.src, node))
        elif isinstance(node, ast.AugAssign):
            self.add(_augassign(self.src, node))
        elif isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            self.add(_number(self.src, node, id(node) in self.defaults))
        elif isinstance(node, ast.UnaryOp):
            self.add(_negations(self.src, node))
        elif isinstance(node, ast.If):
            self.add(_negate_if(self.src, node))
        elif isinstance(node, ast.Call):
            self.add(_swap_args(self.src, node))
            self.add(_min_max(self.src, node))
        elif isinstance(node, ast.Return):
            self.add(_drop_return(self.src, node))
        super().generic_visit(node)


def find_edits(path: str, text: str) -> list[Edit]:
    """Every single edit the operators allow in one module, in source order."""
    src = _Source(path, text)
    finder = _Finder(src)
    finder.visit(ast.parse(text))
    found = {e for e in finder.edits if e.old != e.new}
    return sorted(found)


def apply_edits(files: Mapping[str, str], edits: Sequence[Edit]) -> dict[str, str]:
    """``files`` with ``edits`` applied (a new dict; edits must not overlap).

    Raises:
        MutationError: a span does not hold the text its edit expects, or two edits overlap.
    """
    out = dict(files)
    by_path: dict[str, list[Edit]] = {}
    for edit in edits:
        by_path.setdefault(edit.path, []).append(edit)
    for path, group in by_path.items():
        if path not in out:
            raise MutationError(f"edit for {path!r}, which the project does not have")
        group.sort(key=lambda e: (e.line, e.col), reverse=True)
        for a, b in itertools.pairwise(group):
            if a.overlaps(b):
                raise MutationError(f"overlapping edits in {path}: {a} and {b}")
        text = out[path]
        src = _Source.__new__(_Source)
        src.text, src.lines = text, text.splitlines(keepends=True)
        src.starts = [0]
        for line in src.lines:
            src.starts.append(src.starts[-1] + len(line))
        for edit in group:
            i, j = src.offset(edit.line, edit.col), src.offset(edit.end_line, edit.end_col)
            if text[i:j] != edit.old:
                raise MutationError(
                    f"{path}:{edit.line}: expected {edit.old!r}, found {text[i:j]!r}; the "
                    "task table was built from other sources (rebuild it)"
                )
            text = text[:i] + edit.new + text[j:]
        out[path] = text
    return out


def enclosing_function(tree: ast.AST, line: int) -> tuple[int, int] | None:
    """The line range of the innermost function holding ``line`` (None at module level)."""
    best: tuple[int, int] | None = None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            last = node.end_lineno or node.lineno
            if first <= line <= last and (best is None or first >= best[0]):
                best = (first, last)
    return best
