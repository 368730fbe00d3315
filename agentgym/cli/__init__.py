"""The ``agentgym`` command line (also ``python -m agentgym``).

Each subcommand lives in its own module ``agentgym/cli/cmd_<name>.py`` exposing
``add_parser(subparsers)``, which registers the subcommand and sets ``func`` to a callable
``(args) -> int``. New commands need no edit here.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

from agentgym.error import AgentGymError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentgym",
        description=(
            "Environments for multi-turn agentic RL of LLM and VLM agents. "
            "Start with `agentgym list`, then `agentgym demo`."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from agentgym import __version__

    parser.add_argument("--version", action="version", version=f"agentgym {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if module.name.startswith("cmd_"):
            mod = importlib.import_module(f"{__name__}.{module.name}")
            mod.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except AgentGymError as exc:
        print(f"agentgym {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
