"""The ``agentgym`` command line (also ``python -m agentgym``).

Each subcommand lives in its own module ``agentgym/cli/cmd_<name>.py`` exposing
``add_parser(subparsers)``, which registers the subcommand and sets ``func`` to a callable
``(args) -> int``. New commands need no edit here.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import importlib
import os
import pkgutil
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from agentgym.cli.args import progress_wanted
from agentgym.error import AgentGymError


class _DefaultsFormatter(argparse.HelpFormatter):
    """Help that ends every option's line with its default (flags and unset ones excepted),
    so ``--help`` answers "what happens if I leave it out" for each option."""

    def _default_note(self, action: argparse.Action) -> str:
        if (
            not action.option_strings
            or action.default is None
            or action.default is False
            or action.default == argparse.SUPPRESS
            or action.nargs == 0  # flags: store_true, --help, --version
            or "default" in (action.help or "").lower()
        ):
            return ""
        default = action.default
        if isinstance(default, list | tuple):
            default = " ".join(map(str, default)) or "none"
        return f"(default: {str(default).replace('%', '%%')})"

    def _format_action(self, action: argparse.Action) -> str:
        note = self._default_note(action)
        if note:
            action = copy.copy(action)
            action.help = f"{action.help} {note}" if action.help else note
        return super()._format_action(action)


class _RawDescriptionDefaultsFormatter(_DefaultsFormatter, argparse.RawDescriptionHelpFormatter):
    """The same, with the description kept as written (examples, paragraphs)."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (exit code 2), options shown with their defaults,
    no abbreviated options (``--episode`` is not taken for ``--episodes``) and a "did you
    mean" for a mistyped option. Subcommand parsers inherit it."""

    def __init__(self, *args: Any, **kwargs: Any):
        formatter = kwargs.get("formatter_class", argparse.HelpFormatter)
        if formatter is argparse.RawDescriptionHelpFormatter:
            kwargs["formatter_class"] = _RawDescriptionDefaultsFormatter
        elif formatter is argparse.HelpFormatter:
            kwargs["formatter_class"] = _DefaultsFormatter
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)
        self._deferred: list[Callable[[argparse.ArgumentParser], None]] = []

    def defer(self, add: Callable[[argparse.ArgumentParser], None]) -> None:
        """Run ``add(self)`` (which adds arguments) the first time this parser parses or
        formats its help: options generated from a module that imports torch then cost
        nothing to the other commands, and need no torch for them."""
        self._deferred.append(add)

    def _add_deferred(self) -> None:
        while self._deferred:
            self._deferred.pop(0)(self)

    def format_usage(self) -> str:
        self._add_deferred()
        return super().format_usage()

    def format_help(self) -> str:
        self._add_deferred()
        return super().format_help()

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self._add_deferred()
        parsed, extras = super().parse_known_args(args, namespace)
        for token in extras:
            suggestion = self._suggest(token)
            if suggestion:
                self.error(f"unrecognized argument {token}: did you mean {suggestion}?")
        return parsed, extras

    def _suggest(self, token: str) -> str | None:
        """The closest option of this parser to a mistyped ``--option`` (or ``--option=x``)."""
        if not token.startswith("-") or token == "-":
            return None
        name = token.split("=", 1)[0]
        options = [o for a in self._actions for o in a.option_strings if o.startswith("--")]
        longer = [o for o in options if o.startswith(name) and len(name) > 2]
        if longer:  # an abbreviation: name what it could stand for
            return " or ".join(longer)
        close = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
        return close[0] if close else None

    def error(self, message: str) -> NoReturn:
        choice = _INVALID_CHOICE.search(message)
        if choice:
            options = re.findall(r"'([^']*)'", choice.group(2))
            close = difflib.get_close_matches(choice.group(1), options, n=1, cutoff=0.6)
            if close:
                message += f"; did you mean {close[0]!r}?"
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


#: argparse's message for a value outside ``choices`` (a subcommand, ``--policy``...).
_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)")


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
    if getattr(args, "no_progress", True) is False and not progress_wanted():
        args.no_progress = True  # stderr is a file or pipe: no bar to clutter it
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
