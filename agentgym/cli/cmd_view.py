"""``agentgym view FILE -o out.html``: write a self-contained HTML viewer of a trajectory file.

The page needs no network: open it in any browser, attach it to an issue, or archive it.
A damaged file still renders: what was skipped or repaired is listed on the page and on
stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agentgym.error import AgentGymError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "view", help="render a trajectory file as one HTML page", description=__doc__
    )
    p.add_argument("file", help="an .agtr trajectory file")
    p.add_argument(
        "-o", "--output", default=None, help="output HTML path (default: FILE with .html)"
    )
    p.add_argument(
        "--max-episodes",
        type=int,
        default=None,
        help="render only the first N episodes (large files)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from agentgym.trajectory import render_html
    from agentgym.trajectory.reader import Problem, describe_problems

    out = Path(args.output) if args.output else Path(args.file).with_suffix(".html")
    problems: list[Problem] = []
    try:
        render_html(args.file, out, max_episodes=args.max_episodes, problems=problems)
    except AgentGymError:
        raise  # main() prints it as one line
    except OSError as exc:  # a directory, no permission, a full disk...
        print(
            f"agentgym view: error: cannot read {args.file} or write {out}: {exc}", file=sys.stderr
        )
        return 2
    if problems:
        print(describe_problems(problems), file=sys.stderr)
    print(f"wrote {out} ({out.stat().st_size / 1024:.1f} KiB)")
    return 0
