"""``agentgym check ID``: hold one registered env to every conformance rule.

Every rule runs, even after a failure, and each gets a line: PASS, FAIL (with the rule's
name, what was expected, what happened and the likely cause) or SKIP (with why it does not
apply). When the env raises, the line names the file and line in the env's own code;
``--traceback`` prints the whole traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import traceback

from agentgym.error import ConformanceError
from agentgym.registry import get_record, make
from agentgym.testing import RULES, check_multi_agent_env, run_checks


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check",
        help="run the conformance checks on an env id",
        description=__doc__ + "\n\nExit code 0 when every rule holds, 1 otherwise.",
    )
    p.add_argument("env_id", metavar="ID", help="a registered id, e.g. agentgym/Sokoban-Tiny-v0")
    p.add_argument("--seed", type=int, default=0, help="the seed the checks start from")
    p.add_argument(
        "--traceback",
        action="store_true",
        help="print the full traceback when the env raises (default: its file and line)",
    )
    p.add_argument(
        "--rule",
        action="append",
        choices=[r.name for r in RULES],
        metavar="RULE",
        help="run only this rule (repeatable); the rules: " + ", ".join(r.name for r in RULES),
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    record = get_record(args.env_id)
    if record.multi_agent:
        return _run_multi_agent(record.id, args.traceback)
    try:
        env = make(record.id)
    except Exception as exc:
        print(f"FAIL {record.id}: building the env raised {type(exc).__name__}: {exc}")
        _print_raise(exc, args.traceback)
        return 1
    try:
        report = run_checks(env, seed=args.seed, rules=args.rule)
    finally:
        with contextlib.suppress(Exception):  # the close rule already reported it
            env.close()
    counts = {s: sum(r.status == s for r in report.results) for s in ("passed", "skipped")}
    print(f"{record.id}: {len(report.results)} rules checked")
    print(_indent(report.summary(tracebacks=args.traceback)))
    if report.failed:
        names = ", ".join(r.rule for r in report.failed)
        print(
            f"FAIL {record.id}: {len(report.failed)} of {len(report.results)} rules failed ({names})"
        )
        return 1
    print(
        f"PASS {record.id}: every conformance rule holds "
        f"({counts['passed']} passed, {counts['skipped']} not applicable)."
    )
    return 0


def _run_multi_agent(env_id: str, tracebacks: bool) -> int:
    try:
        check_multi_agent_env(lambda: make(env_id))
    except ConformanceError as exc:
        print(f"FAIL {env_id}\n  {exc}")
        return 1
    except Exception as exc:
        print(f"FAIL {env_id}\n  [multi-agent] the env raised {type(exc).__name__}: {exc}")
        _print_raise(exc, tracebacks)
        return 1
    print(f"PASS {env_id}: every multi-agent conformance check holds.")
    return 0


def _print_raise(exc: BaseException, full: bool) -> None:
    """Where ``exc`` was raised (the deepest frame), or the whole traceback with ``full``."""
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        print(f"  at {frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name}")
    if full:
        print("".join(traceback.format_exception(exc)).rstrip())


def _indent(text: str) -> str:
    return "\n".join(f"  {line}" for line in text.splitlines())
