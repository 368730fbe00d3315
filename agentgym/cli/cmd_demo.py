"""``agentgym demo``: every env family played by its reference policy, recorded, summarised.

For each family it takes one env id, plays a few episodes with the env's oracle (privileged
scripted solver) and with a random policy as a floor, records the oracle's episodes to
``--out``/<family>.agtr, and prints a table. A family whose system parts or Python packages
are missing here is skipped, with the line ``agentgym doctor`` prints for each missing part
(its fix included); skipped families do not make the exit code nonzero.
"""

from __future__ import annotations

import argparse
import os
import time

from agentgym.cli.args import progress_wanted
from agentgym.cli.cmd_run import play_and_maybe_record, summarize
from agentgym.cli.doctor_checks import check_parts, missing_for
from agentgym.registry import list_envs

#: The env shown for a family when it has several (else the first id alphabetically).
PREFERRED = {
    "games": "agentgym/Sokoban-Small-v0",
    "code": "agentgym/CodeTests-v0",
    "users": "agentgym/UserService-v0",
    "visual": "agentgym/VisualDoc-v0",
    "web": "agentgym/WebShop-v0",
}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo", help="run every env family with its reference policy", description=__doc__
    )
    p.add_argument("--episodes", type=int, default=4, help="episodes per family (default 4)")
    p.add_argument(
        "--seed", type=int, default=0, help="the first episode's seed (episode k: seed+k)"
    )
    p.add_argument("--out", default="runs/demo", help="folder for the recordings")
    p.add_argument("--family", action="append", help="only these families (repeatable)")
    p.add_argument("--no-record", action="store_true", help="do not write trajectories")
    p.set_defaults(func=run)


def _families(only: list[str] | None) -> dict[str, str]:
    """The env shown for each family: :data:`PREFERRED`, else its first id."""
    families: dict[str, str] = {}
    for env_record in list_envs(multi_agent=False):
        families.setdefault(env_record.family, env_record.id)
    for family, env_id in PREFERRED.items():
        if family in families:
            families[family] = env_id
    if only:
        families = {f: i for f, i in families.items() if f in only}
    return families


def _play_family(family: str, env_id: str, args: argparse.Namespace, path: str | None) -> tuple:
    """One table row: the oracle's and a random policy's success, turns and time."""
    start = time.perf_counter()
    summaries = [
        summarize(
            play_and_maybe_record(
                env_id,
                policy,
                episodes=args.episodes,
                seed=args.seed,
                num_envs=2,
                env_kwargs=None,
                record=record,
                progress=progress_wanted(),
            )
        )
        for policy, record in (("oracle", path), ("random", None))
    ]
    oracle, floor = summaries
    return (
        family,
        env_id,
        f"{oracle['success_rate']:.0%}",
        f"{floor['success_rate']:.0%}",
        f"{oracle['mean_turns']:.1f}",
        f"{time.perf_counter() - start:.1f}s",
        path or "-",
    )


def _print_table(rows: list[tuple], skipped: list[str], out: str | None) -> None:
    headers = ("family", "env", "oracle", "random", "turns", "time", "recording")
    widths = (
        [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)] if rows else []
    )
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
    if skipped:
        print("\nSkipped families: their parts are missing here (as `agentgym doctor` says):")
        print("\n".join(f"  {line}" for line in skipped))
    if out:
        print(f"\nTrajectories in {out}/. Look at one: agentgym view {out}/games.agtr -o demo.html")


def run(args: argparse.Namespace) -> int:
    families = _families(args.family)
    record = not args.no_record
    if record:
        os.makedirs(args.out, exist_ok=True)
    rows = []
    failed = 0
    parts = check_parts(skip=("torch",))  # what `agentgym doctor` checks; torch is for train
    skipped: list[str] = []
    for family, env_id in sorted(families.items()):
        missing = missing_for(family, parts)
        if missing:
            rows.append((family, env_id, "skipped", "-", "-", "-", "missing: " + ", ".join(p.name for p in missing)))  # fmt: skip
            skipped += [p.line() for p in missing if p.line() not in skipped]
            continue
        try:
            path = os.path.join(args.out, f"{family}.agtr") if record else None
            rows.append(_play_family(family, env_id, args, path))
        except Exception as exc:  # report the family and go on with the others
            failed += 1
            rows.append(
                (family, env_id, "error", "-", "-", "-", f"{type(exc).__name__}: {exc}"[:60])
            )
    _print_table(rows, skipped, args.out if record else None)
    return 1 if failed else 0
