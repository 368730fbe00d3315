"""The library's imports form no circle and reach nothing outside it (issue 33).

What is walked: every module of the installed library, found the way setup.py finds them
(``setuptools.find_packages`` over ``agentgym/`` and the folders it maps into it: ``envs/``,
``simulators/``, ``wrappers/`` install as ``agentgym.envs`` and so on). Data shipped as files
inside a package (the repository family's sample projects) is not a module and is not walked.

What counts as an import, read with ``ast``: ``import a.b``, ``from a import b`` (relative
forms resolved against the file's package), at module level and inside functions and classes
alike (a lazy import inside a function only hides a circle, it does not remove it), and
``importlib.import_module("a.b")`` / ``__import__("a.b")`` with a literal name. Imports under
``if TYPE_CHECKING:`` are left out: they never run, and annotations may need them.

An import is an edge to one file: the most specific library module it names
(``from agentgym.server import errors`` -> ``agentgym/server/errors.py``;
``from agentgym.spaces import UnicodeText`` -> ``agentgym/spaces.py``). The parent packages
Python initialises on the way are not edges, or every module would "import"
``agentgym/__init__.py``.

The rules:

1. The graph of files has no cycle: no two files import each other, and no longer loop
   either (there is none today, so the simplest rule that holds is "acyclic"). A cycle is
   reported as its files and the import lines that close it.
2. The library imports nothing from ``benchmarks``, ``examples`` or ``tests`` (none of them is
   installed), nor the bare top-level ``envs``, ``simulators`` or ``wrappers`` (they exist only
   in a checkout; the installed names are ``agentgym.envs``...).

``KNOWN_CYCLES`` lists the cycles not fixed yet, each with its reason; a listed cycle that no
longer exists fails too, so the list only shrinks.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from setuptools import find_packages

ROOT = Path(__file__).resolve().parents[1]
MAPPED = {
    "agentgym": "agentgym",
    "envs": "agentgym.envs",
    "simulators": "agentgym.simulators",
    "wrappers": "agentgym.wrappers",
}  # folder -> installed package, as in setup.py
OUTSIDE = ("benchmarks", "examples", "tests", "envs", "simulators", "wrappers")

KNOWN_CYCLES: dict[frozenset[str], str] = {}


@dataclass(frozen=True)
class Import:
    """One import statement's target, where it is, and whether it runs at import time."""

    target: str  # the dotted name imported (for ``from m import n``: ``m.n``)
    base: str  # for ``from m import n``: ``m``; else the target
    line: int
    lazy: bool  # inside a function


def library_modules(root: Path, mapped: Mapping[str, str]) -> dict[str, Path]:
    """Installed module name -> file, for the packages setup.py would install."""
    modules: dict[str, Path] = {}
    for folder, installed in mapped.items():
        for pkg in find_packages(str(root), include=[folder, f"{folder}.*"]):
            if pkg != folder and not pkg.startswith(folder + "."):
                continue
            pkg_dir = root.joinpath(*pkg.split("."))
            name = installed + pkg[len(folder) :]
            for path in sorted(pkg_dir.glob("*.py")):
                modules[name if path.stem == "__init__" else f"{name}.{path.stem}"] = path
    return modules


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return getattr(test, "id", None) == "TYPE_CHECKING" or getattr(test, "attr", None) == (
        "TYPE_CHECKING"
    )


def imports_of(name: str, path: Path) -> Iterator[Import]:
    """Every import in the module ``name`` (file ``path``), type-checking-only ones left out."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def walk(node: ast.AST, lazy: bool) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for sub in child.orelse:
                    yield from walk_one(sub, lazy)
                continue
            yield from walk_one(child, lazy)

    def walk_one(node: ast.AST, lazy: bool) -> Iterator[Import]:
        if isinstance(node, ast.Import):
            yield from (Import(a.name, a.name, node.lineno, lazy) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            yield from (Import(f"{base}.{a.name}", base, node.lineno, lazy) for a in node.names)
        elif isinstance(node, ast.Call) and _dynamic_name(node) is not None:
            target = _dynamic_name(node)
            yield Import(target, target, node.lineno, lazy)
        inner = lazy or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        if not isinstance(node, ast.Import | ast.ImportFrom):
            yield from walk(node, inner)

    yield from walk(ast.parse(path.read_text(encoding="utf-8")), False)


def _dynamic_name(call: ast.Call) -> str | None:
    """The literal module name of ``importlib.import_module("x")`` or ``__import__("x")``."""
    func = call.func
    fname = getattr(func, "attr", None) or getattr(func, "id", None)
    if fname not in ("import_module", "__import__") or not call.args:
        return None
    arg = call.args[0]
    return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None


def _resolve(dotted: str, modules: Mapping[str, Path]) -> str | None:
    """The most specific library module that ``dotted`` names, or None (not the library)."""
    parts = dotted.split(".")
    while parts:
        if ".".join(parts) in modules:
            return ".".join(parts)
        parts.pop()
    return None


def import_graph(modules: Mapping[str, Path]) -> dict[str, dict[str, list[Import]]]:
    """module -> {module it imports: the imports that do}."""
    graph: dict[str, dict[str, list[Import]]] = {name: {} for name in modules}
    for name, path in modules.items():
        for imp in imports_of(name, path):
            target = _resolve(imp.target, modules)
            if target is not None and target != name:
                graph[name].setdefault(target, []).append(imp)
    return graph


def cycles(graph: Mapping[str, Mapping[str, object]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            nxt = next((w for w in edges if w not in index or w in on_stack), None)
            if nxt is not None:
                if nxt in index:
                    low[node] = min(low[node], index[nxt])
                else:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(graph[nxt])))
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.add(member)
                    if member == node:
                        break
                if len(members) > 1:
                    found.append(frozenset(members))
    return found


def describe(cycle: frozenset[str], graph: Mapping[str, Mapping[str, list[Import]]]) -> str:
    lines = [" <-> ".join(sorted(cycle))]
    for a in sorted(cycle):
        for b, imps in sorted(graph[a].items()):
            if b in cycle:
                seen = sorted({(i.line, i.lazy) for i in imps})
                where = ", ".join(
                    f"line {n}{' (in a function)' if lazy else ''}" for n, lazy in seen
                )
                lines.append(f"    {a} imports {b}: {where}")
    return "\n".join(lines)


def outside_imports(modules: Mapping[str, Path]) -> list[str]:
    """Imports of benchmarks/examples/tests (or the bare mapped folders) from the library."""
    bad = []
    for name, path in modules.items():
        for imp in imports_of(name, path):
            if imp.base.split(".")[0] in OUTSIDE:
                bad.append(
                    f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:"
                    f"{imp.line} imports {imp.base}"
                )
    return bad


# ---- the library ------------------------------------------------------------------------------

MODULES = library_modules(ROOT, MAPPED)
GRAPH = import_graph(MODULES)


def test_the_walk_sees_the_whole_library():
    """Guards against a walk that passes because it read nothing."""
    assert len(MODULES) > 150
    for name in (
        "agentgym.core",
        "agentgym.server.app",
        "agentgym.envs.grid.sokoban",
        "agentgym.simulators.sandbox.pool",
        "agentgym.wrappers",
    ):
        assert name in MODULES, name
    assert "agentgym.spaces" in GRAPH["agentgym.core"]
    assert not any(".projects." in name for name in MODULES)  # sample projects are data


def test_no_files_of_the_library_import_each_other():
    found = set(cycles(GRAPH))
    new = [describe(c, GRAPH) for c in found - set(KNOWN_CYCLES)]
    assert not new, "import cycles (move the shared piece where it belongs):\n" + "\n".join(new)
    fixed = [sorted(c) for c in set(KNOWN_CYCLES) - found]
    assert not fixed, f"fixed cycles still listed in KNOWN_CYCLES (remove them): {fixed}"


def test_the_library_imports_nothing_from_benchmarks_examples_or_tests():
    assert outside_imports(MODULES) == []


# ---- the walk itself, on a small package made for it -------------------------------------------


def _write(root: Path, files: Mapping[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_the_walk_finds_lazy_relative_and_dynamic_imports_and_skips_type_checking(tmp_path):
    _write(
        tmp_path,
        {
            "lib/__init__.py": "from top.lib.a import A\n",
            "lib/a.py": "from . import b\nA = 1\n",
            "lib/b.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from top.lib.c import C\n"
                "def f():\n    from .sub import d\n"
            ),
            "lib/c.py": "import top.lib.b\nC = 1\n",
            "lib/sub/__init__.py": "",
            "lib/sub/d.py": (
                "import importlib\n"
                "def g():\n    importlib.import_module('top.lib.a')\n    import benchmarks.x\n"
            ),
            "lib/sub/data/x.py": "import tests\n",  # no __init__.py: data, not a module
            "extra/__init__.py": "from ..lib import c\nimport examples\n",
        },
    )
    modules = library_modules(tmp_path, {"lib": "top.lib", "extra": "top.extra"})
    assert sorted(modules) == [
        "top.extra",
        "top.lib",
        "top.lib.a",
        "top.lib.b",
        "top.lib.c",
        "top.lib.sub",
        "top.lib.sub.d",
    ]
    graph = import_graph(modules)
    assert {name: set(edges) for name, edges in graph.items()} == {
        "top.extra": {"top.lib.c"},  # a relative import two levels up
        "top.lib": {"top.lib.a"},
        "top.lib.a": {"top.lib.b"},
        "top.lib.b": {"top.lib.sub.d"},  # the TYPE_CHECKING import is left out
        "top.lib.c": {"top.lib.b"},
        "top.lib.sub": set(),
        "top.lib.sub.d": {"top.lib.a"},  # importlib.import_module with a literal
    }
    assert graph["top.lib.b"]["top.lib.sub.d"][0].lazy
    assert not graph["top.lib.a"]["top.lib.b"][0].lazy
    assert cycles(graph) == [frozenset({"top.lib.a", "top.lib.b", "top.lib.sub.d"})]
    bad = outside_imports(modules)
    assert sorted(b.split(" imports ")[1] for b in bad) == ["benchmarks.x", "examples"]


def test_two_files_that_import_each_other_are_one_cycle_and_a_chain_is_none(tmp_path):
    _write(
        tmp_path,
        {
            "p/__init__.py": "",
            "p/x.py": "def f():\n    from p import y\n",
            "p/y.py": "from p.x import f\n",
            "p/z.py": "from p import y\n",
        },
    )
    graph = import_graph(library_modules(tmp_path, {"p": "p"}))
    assert cycles(graph) == [frozenset({"p.x", "p.y"})]
    assert "p.x imports p.y: line 2 (in a function)" in describe(frozenset({"p.x", "p.y"}), graph)
    del graph["p.x"]["p.y"]
    assert cycles(graph) == []
