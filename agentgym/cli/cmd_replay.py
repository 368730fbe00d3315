"""``agentgym replay FILE``: re-run recorded episodes and report the first divergence of each.

Exit status 0 when every episode replays identically, 1 on any divergence or env error,
2 when the file cannot be read at all. Damage the reader skipped or repaired is listed as
"file problem" lines. The file is not trusted: an episode whose env settings are far beyond
the registered env's is refused (``--trust-settings`` replays it anyway), and each episode
stops at ``--time-limit`` seconds; both are reported as errors with the reason.
"""

from __future__ import annotations

import argparse
import json
import sys

from agentgym.error import AgentGymError


def add_parser(sub: argparse._SubParsersAction) -> None:
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
        default=None,
        metavar="SECONDS",
        help="stop an episode's replay after this long (default 120; 0 = no limit)",
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
    from agentgym.trajectory.replay_guard import DEFAULT_TIME_LIMIT_S

    limit = DEFAULT_TIME_LIMIT_S if args.time_limit is None else args.time_limit
    try:
        report = replay(
            args.file,
            episode_ids=args.episodes,
            max_episodes=args.max_episodes,
            reward_tol=args.reward_tol,
            trust_settings=args.trust_settings,
            time_limit_s=limit,
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
