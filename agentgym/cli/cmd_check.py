"""``agentgym check ID``: hold one registered env to every conformance rule.

Every rule runs, even after a failure, and each gets a line: PASS, FAIL (with the rule's
name, what was expected, what happened and the likely cause) or SKIP (with why it does not
apply). When the env raises, the line names the file and line in the env's own code;
``--traceback`` prints the whole traceback.

After the rules it warns (without failing) when the env lists no admissible actions
(``info["admissible_actions"]``): ``agentgym train``'s reference agent chooses among them,
and without them it writes every turn byte by byte from scratch, which makes almost every
turn invalid (docs/own-env.md, "Admissible actions").
"""

from __future__ import annotations

import argparse
import contextlib
import traceback
from collections.abc import Mapping
from typing import Any

import gymnasium as gym

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


#: Where the own-env tutorial explains admissible actions (named in the warnings).
ADMISSIBLE_DOCS = "docs/own-env.md#admissible-actions"


def lists_admissible_actions(env: gym.Env, seed: int = 0) -> bool:
    """Whether ``env`` lists ``info["admissible_actions"]`` after ``reset(seed=seed)``."""
    _, info = env.reset(seed=seed)
    return isinstance(info, Mapping) and info.get("admissible_actions") is not None


def admissible_actions_warning(env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> str:
    """One line for ``agentgym train`` when ``env_id`` lists no admissible actions, else "".

    Builds the env once, resets it and closes it. The reference policies (byte and word)
    choose among the admissible actions; without them the byte model writes each turn byte
    by byte, and a model trained from scratch then makes (almost) every turn invalid.
    """
    env = make(env_id, **dict(env_kwargs or {}))
    try:
        listed = lists_admissible_actions(env)
    finally:
        with contextlib.suppress(Exception):
            env.close()
    if listed:
        return ""
    return (
        f"warning: {env_id} lists no admissible actions (info['admissible_actions']), so the "
        "reference policy must write every turn byte by byte and almost every turn will be "
        f"invalid; add admissible_actions() to the env ({ADMISSIBLE_DOCS}) or use --policy hf."
    )


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
        try:
            admissible: bool | None = lists_admissible_actions(env, args.seed)
        except Exception:  # the rules below report what the env raises, with its location
            admissible = None
        report = run_checks(env, seed=args.seed, rules=args.rule)
    finally:
        with contextlib.suppress(Exception):  # the close rule already reported it
            env.close()
    counts = {s: sum(r.status == s for r in report.results) for s in ("passed", "skipped")}
    print(f"{record.id}: {len(report.results)} rules checked")
    print(_indent(report.summary(tracebacks=args.traceback)))
    if admissible is False:
        print(
            f"WARN {record.id}: no admissible actions at reset (info['admissible_actions']). "
            "`agentgym train` (its byte policy) chooses among them; without them it writes "
            "every turn byte by byte and almost every turn is invalid. Add "
            f"admissible_actions() to train it with agentgym ({ADMISSIBLE_DOCS}); an LLM "
            "policy (eval, --policy hf, the framework adapters) does not need them."
        )
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
