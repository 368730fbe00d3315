"""``agentgym export FILE --format jsonl -o out.jsonl``: episodes as training data.

``jsonl`` writes one line per episode: ``{"messages": [...OpenAI-style chat...], "tools":
[...], "episode_id", "env_id", "task_id", "seed", "return", "success", "length", ...}``,
ready for SFT trainers. Filters pick, e.g., only successful episodes. From a damaged file
the readable episodes are exported and what was skipped or repaired goes to stderr.

An output file that exists and was not written by ``export`` (the per-episode results of
``agentgym eval --out``, say, which share the default name ``FILE.jsonl``) is never
replaced: the command stops with exit code 2 and names ``-o`` and ``--force``. A file that
``export`` wrote before is replaced, so exporting again after more episodes just works.
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
    p.add_argument(
        "--force",
        action="store_true",
        help="replace the output file even when export did not write it",
    )
    p.set_defaults(func=run)


#: How every line of an export begins: its summary keys come first, in this order, before
#: the tools and the messages (agentgym.trajectory.export), so a line of any size is known
#: by its first bytes.
EXPORT_LINE_START = b'{"episode_id": '
#: Keys of the summary that follow within the first bytes of a line.
EXPORT_SUMMARY_KEYS = (b'"env_id": ', b'"termination": ')
_HEAD_BYTES = 1 << 16


def written_by_export(path: Path) -> bool:
    """Whether ``path`` looks like an earlier export: empty, or a first line that starts
    as every export line does (:data:`EXPORT_LINE_START`, then the summary keys). Only the
    file's first 64 KiB are read, however long its lines (screenshots make long ones)."""
    try:
        with path.open("rb") as f:
            head = f.read(_HEAD_BYTES)
    except OSError:
        return False
    if not head:
        return True  # an export that matched no episode
    first = head.split(b"\n", 1)[0]
    return first.startswith(EXPORT_LINE_START) and all(k in first for k in EXPORT_SUMMARY_KEYS)


def run(args: argparse.Namespace) -> int:
    from agentgym.trajectory import export_jsonl
    from agentgym.trajectory.reader import Problem, describe_problems

    out = Path(args.output) if args.output else Path(args.file).with_suffix(".jsonl")
    if out.is_file() and not args.force and not written_by_export(out):
        print(
            f"agentgym export: error: {out} exists and was not written by export (it holds "
            "something else, e.g. the results of `agentgym eval --out`); nothing was written. "
            "Pick another output with -o PATH, or pass --force to replace it.",
            file=sys.stderr,
        )
        return 2
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
