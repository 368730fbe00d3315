"""``agentgym replay FILE``: re-run recorded episodes and report the first divergence of each.

Exit status 0 when every episode replays identically, 1 on any divergence or env error,
2 when the file cannot be read at all. Damage the reader skipped or repaired is listed as
"file problem" lines. The file is not trusted: an episode whose env settings are far beyond
the registered env's, alone or together, is refused (``--trust-settings`` replays it
anyway), and the whole file has one budget: ``--time-limit`` seconds and ``--work-limit``
units (a reset or a step each, times the episode's settings load). The episode running when
the time is up is stopped, and an episode that would overrun either is not started; all are
reported as errors with the reason.
"""

from __future__ import annotations

import argparse
import json
import sys

from agentgym.error import AgentGymError


def add_parser(sub: argparse._SubParsersAction) -> None:
    from agentgym.trajectory.replay_guard import DEFAULT_TIME_LIMIT_S, DEFAULT_WORK_LIMIT

    p = sub.add_parser(
        "replay", help="check that recorded episodes replay identically", description=__doc__
    )
    p.add_argument("file", help="an .agtr trajectory file")
    p.add_argument(
        "--episode",
        action="append",
        dest="episodes",
        metavar="ID",
        help="replay only this episode id (repeatable)",
    )
    p.add_argument("--max-episodes", type=int, default=None, help="stop after N episodes")
    p.add_argument(
        "--reward-tol",
        type=float,
        default=1e-9,
        help="relative tolerance for rewards (default 1e-9)",
    )
    p.add_argument(
        "--time-limit",
        type=float,
        default=DEFAULT_TIME_LIMIT_S,
        metavar="SECONDS",
        help="seconds the replay of the whole file may take "
        f"(default {DEFAULT_TIME_LIMIT_S:g}; 0 = no limit)",
    )
    p.add_argument(
        "--work-limit",
        type=float,
        default=DEFAULT_WORK_LIMIT,
        metavar="UNITS",
        help="work units the whole file may spend: one per reset or step, times the "
        f"episode's settings load (default {DEFAULT_WORK_LIMIT:,}; 0 = no limit)",
    )
    p.add_argument(
        "--trust-settings",
        action="store_true",
        help="build envs with the file's settings even when they are far beyond the "
        "registered env's (refused by default: they can take hours to build)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable report")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from agentgym.trajectory import replay

    try:
        report = replay(
            args.file,
            episode_ids=args.episodes,
            max_episodes=args.max_episodes,
            reward_tol=args.reward_tol,
            trust_settings=args.trust_settings,
            time_limit_s=args.time_limit,
            work_limit=args.work_limit,
        )
    except AgentGymError:
        raise  # main() prints it as one line
    except OSError as exc:  # a directory, no permission...
        print(f"agentgym replay: error: cannot read {args.file}: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(report.format())
    return 0 if report.ok else 1
