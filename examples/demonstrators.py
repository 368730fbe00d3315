"""Success of the observation-only demonstrators (and the privileged oracles) on every split.

What a clone of a demonstrator can reach is bounded by the demonstrator, so this is the
ceiling of the SFT start. Each split is played on its first ``--tasks`` DISTINCT tasks (task
seeds 0, 1, ... of the split, repeats skipped), noise-free.

    python examples/demonstrators.py --tasks 300
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

SPLITS = {
    "agentgym/Household-v0": ("train", "valid", "test_seen", "test_unseen"),
    "agentgym/SearchQA-v0": ("train", "valid", "test"),
}


def success_table(tasks: int, max_turns: dict[str, list[int]]) -> list[dict[str, Any]]:
    """One row per (env, demonstrator, turn limit, split)."""
    from agentgym.agents.scripted import OraclePolicy
    from agentgym.algos.demos import observer_for
    from agentgym.algos.heldout import distinct_task_seeds, heldout_eval, seed_task_mapper

    rows = []
    for env_id, splits in SPLITS.items():
        for split in splits:
            task_of, close = seed_task_mapper(env_id, split, {})
            try:
                seeds = distinct_task_seeds(task_of, tasks, start=0)
            finally:
                close()
            for turns in max_turns[env_id]:
                for name in ("observer", "oracle"):
                    policy = observer_for(env_id) if name == "observer" else OraclePolicy()
                    t0 = time.perf_counter()
                    res = heldout_eval(env_id, policy, split=split, seeds=seeds,
                                       env_kwargs={"max_turns": turns}, history_turns=None,
                                       num_envs=16, backend="sync")  # fmt: skip
                    rows.append({
                        "env": env_id, "demonstrator": name, "max_turns": turns, "split": split,
                        "tasks": len(seeds), "success": res.success,
                        "turns": sum(o.turns for o in res.outcomes) / len(res.outcomes),
                        "seconds": time.perf_counter() - t0,
                    })  # fmt: skip
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tasks", type=int, default=300, help="distinct tasks per split")
    ap.add_argument("--out", default=None, help="also write the rows to this JSON file")
    args = ap.parse_args()
    rows = success_table(
        args.tasks, {"agentgym/Household-v0": [30, 50], "agentgym/SearchQA-v0": [8]}
    )
    print("| env | demonstrator | max turns | split | tasks | success | mean turns |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['env']} | {r['demonstrator']} | {r['max_turns']} | {r['split']} | "
              f"{r['tasks']} | {r['success']:.3f} | {r['turns']:.1f} |")  # fmt: skip
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
