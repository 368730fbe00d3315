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
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path
from typing import Any

import msgpack

from agentgym.trajectory import format as fmt
from agentgym.trajectory.reader import TrajectoryReader

INDEX_VERSION = 1
_HEAD_BYTES = 4096


def _fingerprint(path: str | os.PathLike[str]) -> list[int]:
    """File size and CRC-32 of its first 4 KiB (the header, with its created_at and pid)."""
    with Path(path).open("rb") as f:
        head = f.read(_HEAD_BYTES)
    return [os.path.getsize(path), zlib.crc32(head)]


def index_path(path: str | os.PathLike[str]) -> Path:
    """Where the sidecar index of ``path`` lives."""
    return Path(str(path) + ".idx")


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
        data = fmt.pack(
            {
                "version": INDEX_VERSION,
                "file_size": size,
                "fingerprint": [size, _fingerprint(path)[1]],
                "episodes": out,
            }
        )
        tmp = index_path(path).with_suffix(".idx.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, index_path(path))
    return out


def _valid_row(row: Any) -> bool:
    """A damaged index row makes the whole index stale (it is rebuilt), never an error."""
    return (
        isinstance(row, dict)
        and isinstance(row.get("episode_id"), str)
        and isinstance(row.get("offsets"), list)
        and all(isinstance(o, int) and not isinstance(o, bool) for o in row["offsets"])
    )


def load_index(path: str | os.PathLike[str]) -> list[dict[str, Any]] | None:
    """The sidecar rows if an index exists and matches the file (size and header), else None."""
    ipath = index_path(path)
    try:
        data = fmt.unpack(ipath.read_bytes())
        if (
            isinstance(data, dict)
            and data.get("version") == INDEX_VERSION
            and data.get("fingerprint") == _fingerprint(path)
            and isinstance(data.get("episodes"), list)
            and all(_valid_row(row) for row in data["episodes"])
        ):
            return list(data["episodes"])
    except (OSError, ValueError, KeyError, TypeError, msgpack.ExtraData):
        return None
    return None


def load_or_build(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The fresh index of ``path``, rebuilding (and rewriting) it when missing or stale."""
    rows = load_index(path)
    return rows if rows is not None else build_index(path)
