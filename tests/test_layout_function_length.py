"""No function of the library package longer than a screen (issue 33).

Every function and method in ``agentgym/`` (the library package itself; envs, simulators and
wrappers are not held to it yet) is measured from its ``def`` line to its last line, docstring
and nested functions included, decorators not. The limit is ``LIMIT`` lines, and
``SERVER_LIMIT`` in ``agentgym/server/``, which issue 33 split into small parts.

``ALLOWED`` lists today's longer functions, each with its reason; the list only shrinks:

* a function over the limit that is not listed fails (split it, or list it with a reason);
* a listed function that is gone or now within the limit fails too (take it off the list),
  so the list never holds stale exceptions.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "agentgym"
LIMIT = 80
SERVER_LIMIT = 60

SPLIT = "to be split (issue 33)"
ALLOWED: dict[str, str] = {
    "agentgym/agents/load.py::load_policy": SPLIT,
    "agentgym/integrations/openrlhf.py::make_agent_classes": SPLIT,
    "agentgym/integrations/trl.py::environment_class": SPLIT,
    "agentgym/algos/advantages.py::gigpo_advantages": SPLIT,
}


def functions(path: Path) -> Iterator[tuple[str, int]]:
    """``(qualified name, lines)`` of every function in ``path``, nested ones included."""

    def walk(node: ast.AST, prefix: str) -> Iterator[tuple[str, int]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = prefix + child.name
                yield name, (child.end_lineno or child.lineno) - child.lineno + 1
                yield from walk(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, prefix + child.name + ".")
            else:
                yield from walk(child, prefix)

    yield from walk(ast.parse(path.read_text(encoding="utf-8")), "")


def limit_for(rel: str) -> int:
    return SERVER_LIMIT if rel.startswith("agentgym/server/") else LIMIT


def long_functions(package: Path, root: Path) -> dict[str, int]:
    """``"path::qualname"`` -> lines, for every function over its limit under ``package``."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        for name, lines in functions(path):
            if lines > limit_for(rel):
                out[f"{rel}::{name}"] = lines
    return out


LONG = long_functions(PACKAGE, ROOT)


def test_no_new_function_is_longer_than_the_limit():
    new = {name: lines for name, lines in LONG.items() if name not in ALLOWED}
    assert not new, (
        f"functions over {LIMIT} lines ({SERVER_LIMIT} in agentgym/server/); split them: {new}"
    )


def test_every_allowed_function_is_still_over_the_limit():
    stale = sorted(set(ALLOWED) - set(LONG))
    assert not stale, f"now within the limit (or gone): take them off ALLOWED: {stale}"


def test_nothing_in_the_server_is_allowed_and_every_exception_has_a_reason():
    assert not [name for name in ALLOWED if name.startswith("agentgym/server/")]
    assert all(reason.strip() for reason in ALLOWED.values())


def test_the_measure_counts_from_def_to_the_last_line_and_sees_nested_functions(tmp_path):
    pkg = tmp_path / "agentgym"
    (pkg / "server").mkdir(parents=True)
    body = "\n".join(f"    x{i} = {i}" for i in range(LIMIT - 1))
    indented = body.replace("    ", "        ")
    (pkg / "a.py").write_text(
        f"def fits():\n{body}\n\n"  # LIMIT lines
        f"class K:\n    @staticmethod\n    def over():\n        y = 0\n{indented}\n\n"
        f"def outer():\n    def inner():\n        pass\n{body}\n"
    )
    server_body = "\n".join(f"    x{i} = {i}" for i in range(SERVER_LIMIT))
    (pkg / "server" / "s.py").write_text(f"def handler():\n{server_body}\n")
    assert dict(functions(pkg / "a.py")) == {
        "fits": LIMIT,
        "K.over": LIMIT + 1,
        "outer": LIMIT + 2,
        "outer.inner": 2,
    }
    assert long_functions(pkg, tmp_path) == {
        "agentgym/a.py::K.over": LIMIT + 1,
        "agentgym/a.py::outer": LIMIT + 2,
        "agentgym/server/s.py::handler": SERVER_LIMIT + 1,
    }
