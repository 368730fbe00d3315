"""``agentgym bench``: run the benchmark harness (from a source checkout) and update BENCHMARKS.md.

Same as ``python -m benchmarks`` in the repository root. The harness (``benchmarks/``) is not
part of the installed package: it measures the source tree it sits in and rewrites that
tree's BENCHMARKS.md. The command finds the checkout in the working directory or, for an
editable install (``pip install -e .``), next to the imported ``agentgym``; with neither it
says how to get one.
"""

from __future__ import annotations

import argparse
import importlib
import sys
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


def _is_checkout(root: Path) -> bool:
    """Whether ``root`` is agentgym's own source tree with its benchmark harness."""
    pyproject = root / "pyproject.toml"
    if not (root / "benchmarks" / "__main__.py").is_file() or not pyproject.is_file():
        return False
    try:
        return 'name = "agentgym"' in pyproject.read_text(encoding="utf-8")
    except OSError:
        return False


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
    loaded = sys.modules.get("benchmarks")
    if loaded is not None and Path(getattr(loaded, "__file__", "") or "").parent != (
        root / "benchmarks"
    ):
        del sys.modules["benchmarks"]  # another project's `benchmarks` package: not ours
    sys.path.insert(0, str(root))
    try:
        bench_main = importlib.import_module("benchmarks.__main__").main
    finally:
        sys.path.remove(str(root))
    argv = list(args.names) + (["--quick"] if args.quick else [])
    return int(bench_main(argv) or 0)
