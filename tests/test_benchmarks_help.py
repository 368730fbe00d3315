"""Every benchmark's own command answers ``--help`` with what it measures and starts nothing
(some run for an hour, one opens 1,024 sandbox sessions)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHILD_ENTRY_POINTS = {"bench_browser_scale", "bgym_peer"}
"""Commands the benchmarks start in child processes with positional arguments, not for users."""


def commands() -> list[str]:
    """The benchmark modules with a ``__main__`` block meant for people."""
    names = []
    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        tree = ast.parse(path.read_text())
        has_main = any(
            isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) for node in tree.body
        )
        if has_main and path.stem not in CHILD_ENTRY_POINTS and path.stem != "__main__":
            names.append(path.stem)
    return names


def _help(name: str) -> subprocess.CompletedProcess[str]:
    """``python -m benchmarks.<name> --help``, as a person would type it."""
    return subprocess.run(
        [sys.executable, "-m", f"benchmarks.{name}", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_benchmark_commands_are_found() -> None:
    assert {"bench_core", "bench_sandbox_scale", "bench_repo", "bench_rollout"} <= set(commands())


@pytest.mark.parametrize("name", commands())
def test_help_describes_the_benchmark_and_runs_nothing(name: str) -> None:
    out = _help(name)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("usage: "), out.stdout[:300]
    assert "|---" not in out.stdout  # no result table: nothing ran


@pytest.mark.parametrize("name", sorted(CHILD_ENTRY_POINTS))
def test_a_child_entry_point_given_help_says_how_to_run_it(name: str) -> None:
    """A person who tries ``--help`` on a child process's command gets how to run it, not
    a traceback (a KeyError and a missing BrowserGym module, before)."""
    out = _help(name)
    assert out.returncode != 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert "python -m benchmarks browser_scale" in out.stderr or "Usage: " in out.stderr
