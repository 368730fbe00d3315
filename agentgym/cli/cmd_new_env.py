"""``agentgym new-env NAME``: write a package with an env that checks, tests and trains as is.

The package is the one docs/own-env.md builds by hand, with a small world agentgym's
reference agent learns within a few CPU minutes (a track walk with a ``move`` tool):

    NAME/pyproject.toml          the package, with the agentgym.envs entry point
    NAME/PACKAGE/__init__.py     register_all(): registers PACKAGE/Name-v0
    NAME/PACKAGE/env.py          the env: tasks, tool, rewards, admissible actions, oracle
    NAME/tests/test_env.py       the contract, the oracle, the rewards, bad input
    NAME/README.md               the commands below

Then ``python -m pip install -e ./NAME``, ``agentgym check ID``, ``agentgym play ID`` and
``agentgym train --env ID``. Files that exist are never replaced without ``--force``.
"""

from __future__ import annotations

import argparse

from agentgym.scaffold import scaffold_names, write


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "new-env",
        help="write a new env package that passes `check` and trains as generated",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("name", metavar="NAME", help="the env's name, e.g. GridWalk or grid-walk")
    p.add_argument(
        "--dir",
        default=None,
        help="the folder to create (default: NAME in kebab case, e.g. grid-walk)",
    )
    p.add_argument(
        "--namespace", default=None, help="the id's namespace (default: the package name)"
    )
    p.add_argument("--force", action="store_true", help="replace files that already exist")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    names = scaffold_names(args.name, namespace=args.namespace, directory=args.dir)
    files = write(names, force=args.force)
    folder = names.directory
    print(f"wrote {len(files)} files to {folder}/ for the env {names.env_id}:")
    for path in files:
        print(f"  {path}")
    print(
        "next:\n"
        f"  python -m pip install -e ./{folder}     # registers {names.env_id}\n"
        f"  agentgym check {names.env_id}\n"
        f"  python -m pytest -q {folder}/tests\n"
        f"  agentgym play {names.env_id}\n"
        f"  agentgym train --env {names.env_id} --iterations 12 --task-seeds 0 1 2 3 4 5 6 7 "
        f"--out runs/{names.kebab}"
    )
    return 0
