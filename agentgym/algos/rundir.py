"""The output folder of a training run: refuse to mix runs, resume only what can be resumed.

A run folder holds ``config.json``, ``checkpoint.pt``, ``metrics.csv``, ``eval.csv``,
``curve.png``, ``tb/`` and ``rollouts.agtr``. Training into a folder that already holds
any of them would silently overwrite the checkpoint and metrics, leave a stale
``rollouts.agtr`` and mix two runs in ``tb/``; so :func:`prepare_run_dir` refuses unless the
caller asks to ``resume`` (same algorithm, checkpoint present) or to ``overwrite`` (the old
artifacts are deleted first).

Ctrl-C must never leave a half-written checkpoint or a half-applied update behind:
:func:`sigint_deferred` holds an interrupt back until a block that changes the run's state
has finished, and checkpoints are written to a temporary file and renamed into place.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shutil
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

from agentgym.error import InvalidConfigError

#: Files and folders a run writes; ``overwrite`` removes exactly these.
RUN_ARTIFACTS = (
    "config.json",
    "checkpoint.pt",
    "metrics.csv",
    "eval.csv",
    "eval_tasks.jsonl",
    "curve.png",
    "rollouts.agtr",
    "rollouts.agtr.idx",
    "tb",
)


def existing_artifacts(out: Path) -> list[str]:
    """Names of run artifacts already present in ``out``."""
    return [name for name in RUN_ARTIFACTS if (out / name).exists()]


def prepare_run_dir(out: Path, *, algo: str, resume: bool, overwrite: bool) -> Path | None:
    """Make ``out`` ready for a run; return the checkpoint to resume from (or None).

    Raises:
        InvalidConfigError: the folder holds another run and neither ``resume`` nor
            ``overwrite`` was asked; ``resume`` without a checkpoint; ``resume`` with an
            algorithm other than the one the folder was trained with; both flags at once.
    """
    if resume and overwrite:
        raise InvalidConfigError(
            "resume and overwrite exclude each other: --resume continues the run in the "
            "folder, --overwrite deletes it. Pass one of them."
        )
    found = existing_artifacts(out) if out.is_dir() else []
    if resume:
        ckpt = out / "checkpoint.pt"
        if not ckpt.exists():
            raise InvalidConfigError(
                f"--resume: no checkpoint at {ckpt} (found: {', '.join(found) or 'nothing'}). "
                "Likely cause: a wrong --out, or the run stopped before its first checkpoint. "
                "Drop --resume to start a new run."
            )
        previous = _previous_algo(out)
        if previous is not None and previous != algo:
            raise InvalidConfigError(
                f"--resume: the run in {out} was trained with --algo {previous}, not {algo}. "
                f"Resume it with --algo {previous}, or start the new algorithm from its "
                f"checkpoint in a new folder: --init {ckpt} --out <new folder>."
            )
        return ckpt
    if found and not overwrite:
        raise InvalidConfigError(
            f"{out} already holds a training run ({', '.join(found)}). Pass --resume to "
            "continue it, --overwrite to delete it and start again, or choose another --out."
        )
    out.mkdir(parents=True, exist_ok=True)
    for name in found:
        path = out / name
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()
    return None


def _previous_algo(out: Path) -> str | None:
    try:
        data: dict[str, Any] = json.loads((out / "config.json").read_text())
    except (OSError, ValueError):
        return None
    algo = data.get("algo")
    return str(algo) if algo is not None else None


def logged_iterations(out: Path) -> int:
    """How many iteration rows ``out/metrics.csv`` holds (0 when there is none)."""
    try:
        with open(out / "metrics.csv", newline="") as fh:
            return sum(1 for _ in csv.DictReader(fh))
    except (OSError, csv.Error):
        return 0


def write_atomically(path: Path, write: Callable[[Path], None]) -> None:
    """``write(tmp)`` then rename ``tmp`` to ``path``: readers see the old file or the new one."""
    tmp = path.with_name(path.name + ".tmp")
    write(tmp)
    os.replace(tmp, path)


@contextlib.contextmanager
def sigint_deferred() -> Iterator[None]:
    """Hold Ctrl-C back until the block ends, then raise :class:`KeyboardInterrupt`.

    For blocks that must run whole (a gradient update, writing a checkpoint). Off the main
    thread, where Python delivers no signal, it does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[FrameType | None] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        caught.append(frame)

    previous = signal.signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)
    if caught:
        if callable(previous):
            previous(signal.SIGINT, caught[0])
        else:
            raise KeyboardInterrupt
