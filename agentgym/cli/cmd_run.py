"""``agentgym run ID``: play episodes of one env with a policy and print how they went.

Examples:
    agentgym run agentgym/Sokoban-Small-v0 --policy oracle --episodes 20
    agentgym run Sokoban-Tiny-v0 --policy random --episodes 100 --record runs/tiny.agtr
    agentgym run Sokoban-Tiny-v0 --env-kwargs '{"max_turns": 4}'
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Sequence
from typing import Any

from agentgym.agents import make_policy
from agentgym.cli.args import (
    check_env_args,
    json_object,
    non_negative_int,
    pin_data_files,
    positive_int,
    progress_wanted,
)
from agentgym.episodes import EpisodeSummary, play


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="play episodes of an env with a policy",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("env_id", metavar="ID", help="a registered id (see `agentgym list`)")
    p.add_argument(
        "--policy",
        default="random",
        choices=["random", "oracle"],
        help="random: uniform over well-formed actions; oracle: the env's privileged solver",
    )
    p.add_argument(
        "--episodes", type=positive_int, default=10, help="how many episodes (default 10)"
    )
    p.add_argument(
        "--seed",
        type=non_negative_int,
        default=0,
        help="episode k is reset with seed+k (default 0)",
    )
    p.add_argument(
        "--num-envs", type=positive_int, default=4, help="envs stepped concurrently (default 4)"
    )
    p.add_argument(
        "--split", default=None, help="task split: train, test, or one the env adds (e.g. valid)"
    )
    p.add_argument(
        "--env-kwargs",
        default="{}",
        metavar="JSON",
        help="""keyword arguments for gym.make, e.g. '{"max_turns": 8}'""",
    )
    p.add_argument("--record", metavar="FILE", help="write every step to this .agtr file")
    p.add_argument("--json", action="store_true", help="print per-episode results as JSON lines")
    p.add_argument(
        "--quiet",
        action="store_true",
        help="no progress bar (none either when stderr is not a terminal)",
    )
    p.set_defaults(func=run)


def summarize(summaries: Sequence[EpisodeSummary]) -> dict[str, float]:
    """Success rate, mean return, mean turns and invalid-action rate over episodes."""
    n = len(summaries)
    turns = sum(s.turns for s in summaries)
    return {
        "episodes": n,
        "success_rate": sum(s.success for s in summaries) / n if n else 0.0,
        "mean_return": statistics.fmean(s.total_reward for s in summaries) if n else 0.0,
        "mean_turns": turns / n if n else 0.0,
        "invalid_rate": sum(s.invalid_actions for s in summaries) / turns if turns else 0.0,
        "env_errors": sum(1 for s in summaries if s.error),
    }


def play_and_maybe_record(
    env_id: str,
    policy_name: str,
    *,
    episodes: int,
    seed: int,
    num_envs: int,
    env_kwargs: dict | None,
    record: str | None,
    progress: bool,
) -> list[EpisodeSummary]:
    """``play`` with the named scripted policy, streaming to ``record`` when given."""
    policy = make_policy(policy_name, seed=seed)
    kwargs: dict[str, Any] = dict(
        episodes=episodes, seed=seed, num_envs=num_envs, env_kwargs=env_kwargs, progress=progress
    )
    if not record:
        return play(env_id, policy, **kwargs)
    from agentgym.trajectory import Recorder

    with Recorder(record) as rec:
        callbacks: dict[str, Any] = rec.play_callbacks(env_id, env_kwargs=env_kwargs, seed=seed)
        return play(env_id, policy, **kwargs, **callbacks)


def run(args: argparse.Namespace) -> int:
    env_kwargs = json_object(args.env_kwargs)
    if args.split:
        env_kwargs["split"] = args.split
    record = check_env_args(args.env_id, env_kwargs, "run")
    if args.record and env_kwargs:  # a recording names the user's data files by digest
        env_kwargs = pin_data_files(record.id, env_kwargs)
    summaries = play_and_maybe_record(
        record.id,
        args.policy,
        episodes=args.episodes,
        seed=args.seed,
        num_envs=args.num_envs,
        env_kwargs=env_kwargs or None,
        record=args.record,
        progress=progress_wanted(args.quiet),
    )
    if args.json:
        for s in summaries:
            print(json.dumps(s.__dict__))
    stats = summarize(summaries)
    print(
        f"{record.id}  policy={args.policy}  episodes={stats['episodes']}  "
        f"success={stats['success_rate']:.0%}  return={stats['mean_return']:.2f}  "
        f"turns={stats['mean_turns']:.1f}  invalid={stats['invalid_rate']:.0%}"
    )
    if stats["env_errors"]:
        print(f"warning: {stats['env_errors']} episodes ended with an environment error")
    if args.record:
        print(f"recorded to {args.record} (view: agentgym view {args.record} -o view.html)")
    return 0
