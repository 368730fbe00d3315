"""``agentgym list``: every registered env with its family, modality, tasks and rewards."""

from __future__ import annotations

import argparse
import json
from typing import Any

from agentgym.registry import EnvRecord, list_envs


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("list", help="list registered envs", description=__doc__)
    p.add_argument("--family", help="only this family (games, code, web, users, visual, ...)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def _details(record: EnvRecord) -> dict[str, Any]:
    """Task counts and reward components, read from the env class without building it."""
    details: dict[str, Any] = {"train": "?", "test": "?", "rewards": ""}
    if record.multi_agent:
        return details
    try:
        cls = record.load()
        weights = getattr(cls, "default_reward_weights", {})
        details["rewards"] = ", ".join(f"{k}={v:g}" for k, v in weights.items())
        env = cls(**record.kwargs)
        try:
            details["train"] = len(env.task_ids("train"))
            details["test"] = len(env.task_ids("test"))
        finally:
            env.close()
    except Exception as exc:  # an optional dependency may be missing
        details["rewards"] = f"(unavailable: {type(exc).__name__}: {exc})"[:80]
    return details


def run(args: argparse.Namespace) -> int:
    records = list_envs(args.family)
    rows = []
    for r in records:
        d = _details(r)
        rows.append(
            {
                "id": r.id,
                "family": r.family,
                "modality": r.modality,
                "multi_agent": r.multi_agent,
                "train_tasks": d["train"],
                "test_tasks": d["test"],
                "reward_components": d["rewards"],
                "description": r.description,
            }
        )
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print("no envs registered" + (f" in family {args.family!r}" if args.family else ""))
        return 0
    headers = ["id", "family", "modality", "agents", "train", "test", "reward components"]
    table = [
        [
            row["id"],
            row["family"],
            row["modality"],
            "multi" if row["multi_agent"] else "single",
            str(row["train_tasks"]),
            str(row["test_tasks"]),
            row["reward_components"],
        ]
        for row in rows
    ]
    widths = [max(len(h), *(len(t[i]) for t in table)) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)))
    print("  ".join("-" * w for w in widths))
    for t in table:
        print("  ".join(c.ljust(w) for c, w in zip(t, widths)))
    print(f"\n{len(rows)} envs. Build one with gym.make('agentgym:<id>').")
    return 0
