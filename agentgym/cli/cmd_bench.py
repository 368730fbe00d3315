"""``agentgym bench``: run the benchmark harness (from a source checkout) and update BENCHMARKS.md.

Same as ``python -m benchmarks`` in the repository root, which is what it runs, as a child
process in that folder. The harness (``benchmarks/``) is not part of the installed package
(the wheel holds ``agentgym`` and the folders it maps, nothing else) and the library never
imports it: it measures the source tree it sits in and rewrites that tree's BENCHMARKS.md.
The command finds the checkout in the working directory or, for an editable install
(``pip install -e .``), next to the imported ``agentgym``; with neither it says how to get one.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tomllib
from pathlib import Path

from agentgym.error import AgentGymError

CHECKOUT_HINT = (
    "`agentgym bench` needs a source checkout of agentgym: the benchmark harness (the "
    "benchmarks/ folder) ships with the source, not with the installed package. Get one "
    "with `git clone <agentgym repository> && cd agentgym && pip install -e .`, then run "
    "`agentgym bench` (or `python -m benchmarks`) in that folder."
)


class CheckoutRequiredError(AgentGymError):
    """A command that only works inside a source checkout was run outside one."""


DIST_NAMES = ("agentgym-suite", "agentgym")
"""The distribution's name in pyproject.toml (``agentgym`` before it was renamed)."""


def _is_checkout(root: Path) -> bool:
    """Whether ``root`` is agentgym's own source tree with its benchmark harness."""
    pyproject = root / "pyproject.toml"
    if not (root / "benchmarks" / "__main__.py").is_file() or not pyproject.is_file():
        return False
    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    return project.get("name") in DIST_NAMES


def find_checkout(cwd: Path | None = None) -> Path | None:
    """The agentgym source tree to benchmark: the working directory, else the editable one."""
    import agentgym

    candidates = [cwd or Path.cwd(), Path(agentgym.__file__).resolve().parents[1]]
    return next((root for root in candidates if _is_checkout(root)), None)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="run benchmarks and write BENCHMARKS.md", description=__doc__)
    p.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    p.add_argument("--quick", action="store_true", help="smaller budgets (for a smoke run)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    root = find_checkout()
    if root is None:
        raise CheckoutRequiredError(CHECKOUT_HINT)
    argv = list(args.names) + (["--quick"] if args.quick else [])
    return subprocess.call(bench_command(argv), cwd=root, env=_checkout_env(root))


def bench_command(argv: list[str]) -> list[str]:
    """The command line that runs the harness: this interpreter, ``-m benchmarks``, ``argv``.

    Run in the checkout's root, where ``python -m`` finds its ``benchmarks`` package first.
    """
    return [sys.executable, "-m", "benchmarks", *argv]


def _checkout_env(root: Path) -> dict[str, str]:
    """This process's environment with ``root`` first on ``PYTHONPATH``: ``python -m`` puts
    the working directory first on its path, except under ``PYTHONSAFEPATH``; then a
    ``benchmarks`` package elsewhere on the user's path could take the checkout's place."""
    paths = [str(root), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
