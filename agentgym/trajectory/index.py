"""The optional sidecar index ``FILE.agtr.idx``: one summary row per episode.

It is a cache, never the source of truth: it records the size of the trajectory file it was
built from, is ignored when that no longer matches (the file grew or was truncated), and
can be rebuilt at any time with :func:`build_index`. Rows hold the episode id, env id, task
id, seed, return, success, length, and the byte offsets of the episode's frames, so a
filtered read or a lookup by id skips the rest of the file.

A fresh fingerprint does not make the rows true (a byte flipped in place keeps the size, and
anyone can write an index), so readers check every row against the frames it points at:
a lookup by id uses a row only when its offsets hold intact frames of that episode (start,
steps numbered 1..n, an end of length n) and otherwise scans the file; a filtered read
checks each episode the index rules out against its real ``episode_end`` and re-reads it
if the row was wrong. A lying index can cost time, never change a result.

This module builds the rows (a scan with the reader); the file itself (its path, freshness,
reading and writing) is :mod:`agentgym.trajectory.index_file`, whose names are re-exported here.
"""

from __future__ import annotations

import os
from typing import Any

from agentgym.trajectory.index_file import (
    INDEX_VERSION,
    fingerprint,
    index_path,
    load_index,
    write_index,
)
from agentgym.trajectory.reader import TrajectoryReader

__all__ = [
    "INDEX_VERSION",
    "build_index",
    "fingerprint",
    "index_path",
    "load_index",
    "load_or_build",
    "write_index",
]


def build_index(path: str | os.PathLike[str], *, write: bool = True) -> list[dict[str, Any]]:
    """Scan ``path`` once and return (and by default write) its episode rows."""
    rows: dict[str, dict[str, Any]] = {}
    with TrajectoryReader(path) as reader:
        size = reader._size()
        for offset, frame in reader.frames_with_offsets():
            eid = frame.get("episode_id")
            kind = frame.get("type")
            if not isinstance(eid, str):
                continue
            row = rows.setdefault(
                eid,
                {
                    "episode_id": eid,
                    "env_id": None,
                    "task_id": None,
                    "seed": None,
                    "return": None,
                    "success": None,
                    "length": 0,
                    "complete": False,
                    "offsets": [],
                },
            )
            row["offsets"].append(offset)
            if kind == "episode_start":
                row.update(
                    env_id=frame.get("env_id"), task_id=frame.get("task_id"), seed=frame.get("seed")
                )
            elif kind == "step":
                row["length"] += 1
            elif kind == "episode_end":
                row.update(
                    {
                        "return": frame.get("return"),
                        "success": frame.get("success"),
                        "complete": True,
                    }
                )
                if row["seed"] is None:
                    row["seed"] = frame.get("seed")
    out = list(rows.values())
    if write:
        write_index(path, out, size)
    return out


def load_or_build(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The fresh index of ``path``, rebuilding (and rewriting) it when missing or stale."""
    rows = load_index(path)
    return rows if rows is not None else build_index(path)
