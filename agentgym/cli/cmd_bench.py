"""``agentgym bench``: run the benchmark harness (from a source checkout) and update BENCHMARKS.md.

Same as ``python -m benchmarks`` in the repository root.
"""

from __future__ import annotations

import argparse
import os
import sys

from agentgym.error import DependencyMissingError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="run benchmarks and write BENCHMARKS.md", description=__doc__)
    p.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    p.add_argument("--quick", action="store_true", help="smaller budgets (for a smoke run)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    sys.path.insert(0, os.getcwd())
    try:
        from benchmarks.__main__ import main as bench_main
    except ImportError as exc:
        raise DependencyMissingError(
            "the benchmarks/ folder (it ships with the source, not the wheel)",
            "run `agentgym bench` from the root of a git checkout of agentgym",
        ) from exc
    argv = list(args.names) + (["--quick"] if args.quick else [])
    return bench_main(argv)
