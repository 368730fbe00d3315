"""``agentgym check ID``: run the conformance suite on one registered env."""

from __future__ import annotations

import argparse

from agentgym.error import ConformanceError
from agentgym.registry import get_record, make
from agentgym.testing import check_env, check_multi_agent_env


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check",
        help="run the conformance checks on an env id",
        description=__doc__ + "\n\nExit code 0 when every check passes, 1 otherwise.",
    )
    p.add_argument("env_id", metavar="ID", help="a registered id, e.g. agentgym/Sokoban-Tiny-v0")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    record = get_record(args.env_id)
    try:
        if record.multi_agent:
            check_multi_agent_env(lambda: make(record.id))
        else:
            env = make(record.id)
            try:
                check_env(env, seed=args.seed)
            finally:
                env.close()
    except ConformanceError as exc:
        print(f"FAIL {record.id}\n  {exc}")
        return 1
    print(f"PASS {record.id}: every conformance check holds.")
    return 0
