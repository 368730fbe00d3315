"""Asynchronous, partial, failure-aware rollouts with ``agentgym.rollout`` (issue 25).

    python examples/async_rollouts.py                                # a noisy oracle
    python examples/async_rollouts.py --base-url http://127.0.0.1:8000/v1 --model NAME

Collects GRPO groups a few times in a row the way an RL trainer would between updates:
``--in-flight`` episodes run at once, each stepped as soon as its own action arrives; a
collection stops at ``--groups`` complete groups and carries the unfinished episodes (env,
chat, tokens, policy version) into the next one (APRIL). Episodes ended by the
infrastructure (env crash or timeout, a policy request that failed after its retries) are
retried, and a group still holding one is released ``usable=False``, out of the advantages.
"""

from __future__ import annotations

import argparse
import itertools

import numpy as np

from agentgym.agents.scripted import NoisyPolicy, OraclePolicy
from agentgym.rollout import (
    AsyncHTTPPolicy,
    LocalEnvSource,
    RolloutConfig,
    RolloutEngine,
    training_arrays,
)


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--env", default="agentgym/Sokoban-Tiny-v0")
    p.add_argument(
        "--base-url", default=None, help="an OpenAI-compatible server (default: a noisy oracle)"
    )
    p.add_argument("--model", default="default", help="the served model name")
    p.add_argument("--group-size", type=int, default=4)
    p.add_argument("--groups", type=int, default=4, help="complete groups per collection")
    p.add_argument("--in-flight", type=int, default=32, help="episodes running at once")
    p.add_argument("--collections", type=int, default=3)
    args = p.parse_args()
    policy = (
        AsyncHTTPPolicy(args.base_url, args.model, max_connections=args.in_flight)
        if args.base_url
        else NoisyPolicy(OraclePolicy(), epsilon=0.3)
    )
    config = RolloutConfig(group_size=args.group_size, max_in_flight=args.in_flight)
    engine = RolloutEngine(LocalEnvSource(args.env), policy, itertools.count(), config)
    try:
        for version in range(args.collections):
            collection = engine.collect_sync(args.groups, policy_version=version)
            s = collection.summary
            arrays = training_arrays(collection)
            print(
                f"collection {version}: {s.usable_groups} usable groups "
                f"({s.excluded_groups} excluded), {s.episodes_finished} episodes, "
                f"{s.infra_failures} infra failures, carried in "
                f"{s.carried_in} / out {s.carried_out}, carried-over token share "
                f"{s.carried_token_share:.2f}, {s.seconds:.2f} s; mean |advantage| "
                f"{float(np.mean(np.abs(arrays.grpo_advantages()))) if arrays.rows else 0:.3f}"
            )
    finally:
        engine.close()


if __name__ == "__main__":
    main()
