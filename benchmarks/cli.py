"""The one thing every ``python -m benchmarks.bench_<name>`` command line shares: ``--help``
answers with what the benchmark measures instead of starting it (some run for an hour)."""

from __future__ import annotations

import sys


def exit_on_help(doc: str | None, usage: str, argv: list[str] | None = None) -> None:
    """Print ``usage`` and the module's docstring, and exit, when ``argv`` (default
    ``sys.argv[1:]``) asks for help; else return."""
    args = sys.argv[1:] if argv is None else argv
    if "-h" in args or "--help" in args:
        print(f"usage: {usage}\n\n{(doc or '').strip()}")
        raise SystemExit(0)
