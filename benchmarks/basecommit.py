"""Import an older commit's agentgym in a subprocess, for before/after rows.

Sections that compare today's code with the code of an earlier commit (the sandbox and core
A/B rows, against 11f859c) run the old code in its own Python process whose ``PYTHONPATH``
points at :func:`base_tree`'s directory: there ``import agentgym`` finds the commit's
``agentgym/`` with its ``simulators``, ``envs`` and ``wrappers`` linked in, the same mapping
the editable install makes for today's tree. Everything else (numpy, gymnasium, ...) is the
current environment's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

BASE_COMMIT = "11f859c"
ROOT = Path(__file__).resolve().parent.parent
_MAPPED = ("simulators", "envs", "wrappers")  # installed as agentgym.<name>


def _checkout(commit: str) -> Path | None:
    """A plain tree of ``commit``: ``$AGENTGYM_BENCH_BASE`` or ``/tmp/base`` when one is there
    (``git worktree add /tmp/base COMMIT``), else ``git archive COMMIT`` unpacked once into
    the temp dir. None when git cannot produce it (no repository, commit unknown)."""
    given = os.environ.get("AGENTGYM_BENCH_BASE", "/tmp/base")
    if os.path.isdir(os.path.join(given, "agentgym")):
        head = subprocess.run(
            ["git", "-C", given, "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        want = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", commit], capture_output=True, text=True
        ).stdout.strip()
        if head and head == want:
            return Path(given)
    tree = Path(tempfile.gettempdir()) / f"agentgym-bench-{commit}" / "src"
    if (tree / "agentgym").is_dir():
        return tree
    tree.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", commit], capture_output=True
    )
    if archive.returncode != 0:
        return None
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    return tree if (tree / "agentgym").is_dir() else None


def base_tree(commit: str = BASE_COMMIT) -> str | None:
    """A directory to put on ``PYTHONPATH`` so that ``import agentgym`` imports ``commit``.

    None when the commit's tree cannot be had (the section then says it skipped the row).
    """
    base = _checkout(commit)
    if base is None:
        return None
    shadow = base.parent / f"agentgym-bench-shadow-{commit}"
    pkg = shadow / "agentgym"
    pkg.mkdir(parents=True, exist_ok=True)
    links = {n: base / "agentgym" / n for n in os.listdir(base / "agentgym")}
    links.update({n: base / n for n in _MAPPED if (base / n).is_dir()})
    for name, target in links.items():
        if not os.path.lexists(pkg / name):
            os.symlink(target, pkg / name)
    return str(shadow)


def base_env(commit: str = BASE_COMMIT) -> dict[str, str] | None:
    """``os.environ`` with ``PYTHONPATH`` set for :func:`base_tree` (None: no tree)."""
    shadow = base_tree(commit)
    if shadow is None:
        return None
    return {**os.environ, "PYTHONPATH": shadow}


def alternate(
    child: str, args: list[str], rounds: int, commit: str = BASE_COMMIT
) -> dict[str, list[dict]] | None:
    """Run the script ``child`` (``python -c child *args``, printing one JSON line last) with
    today's code and with ``commit``'s, alternating new/old ``rounds`` times (ABAB, so drift in
    the machine's load falls on both). Returns each side's parsed results; None when the
    commit's tree cannot be had."""
    old_env = base_env(commit)
    if old_env is None:
        return None
    runs: dict[str, list[dict]] = {"new": [], "old": []}
    for _ in range(rounds):
        for tag, env in (("new", dict(os.environ)), ("old", old_env)):
            out = subprocess.run([sys.executable, "-c", child, *args], env=env,
                                 capture_output=True, text=True, check=True, cwd="/")  # fmt: skip
            runs[tag].append(json.loads(out.stdout.strip().splitlines()[-1]))
    return runs
