"""``agentgym export FILE --format jsonl -o out.jsonl``: episodes as training data.

``jsonl`` writes one line per episode: ``{"messages": [...OpenAI-style chat...], "tools":
[...], "episode_id", "env_id", "task_id", "seed", "return", "success", "length", ...}``,
ready for SFT trainers. Filters pick, e.g., only successful episodes. From a damaged file
the readable episodes are exported and what was skipped or repaired goes to stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agentgym.error import AgentGymError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export", help="export trajectories as training data (JSONL chat)", description=__doc__
    )
    p.add_argument("file", help="an .agtr trajectory file")
    p.add_argument("--format", choices=["jsonl"], default="jsonl", help="output format")
    p.add_argument("-o", "--output", default=None, help="output path (default: FILE with .jsonl)")
    p.add_argument(
        "--images",
        choices=["data_url", "omit"],
        default="data_url",
        help="screenshots as PNG data URLs (default) or left out",
    )
    p.add_argument("--success-only", action="store_true", help="only successful episodes")
    p.add_argument("--min-return", type=float, default=None, help="only episodes with return >= X")
    p.add_argument("--task", default=None, help="only this task id")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from agentgym.trajectory import export_jsonl
    from agentgym.trajectory.reader import Problem, describe_problems

    out = Path(args.output) if args.output else Path(args.file).with_suffix(".jsonl")
    problems: list[Problem] = []
    try:
        n = export_jsonl(
            args.file,
            out,
            images=args.images,
            problems=problems,
            success=True if args.success_only else None,
            min_return=args.min_return,
            task_id=args.task,
        )
    except AgentGymError:
        raise  # main() prints it as one line
    except OSError as exc:  # a directory, no permission, a full disk...
        print(
            f"agentgym export: error: cannot read {args.file} or write {out}: {exc}",
            file=sys.stderr,
        )
        return 2
    if problems:
        print(describe_problems(problems), file=sys.stderr)
    print(f"wrote {n} episodes to {out}")
    return 0
