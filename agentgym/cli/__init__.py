"""The ``agentgym`` command line (also ``python -m agentgym``).

Each subcommand lives in its own module ``agentgym/cli/cmd_<name>.py`` exposing
``add_parser(subparsers)``, which registers the subcommand and sets ``func`` to a callable
``(args) -> int``. New commands need no edit here.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
from collections.abc import Sequence
from typing import NoReturn

from agentgym.error import AgentGymError


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (exit code 2); subcommand parsers inherit it."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
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
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows up here, not at interpreter exit
        return code
    except BrokenPipeError:
        # The reader went away (`agentgym list | head`): stop quietly, as Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except AgentGymError as exc:
        print(f"agentgym {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
