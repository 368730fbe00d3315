"""The sidecar index file ``FILE.agtr.idx`` itself: where it lives, how it is known fresh,
reading and writing it.

This is the part of the index the reader needs (:class:`~agentgym.trajectory.reader.
TrajectoryReader` looks episodes up in it); building the rows takes a scan with the reader and
lives in :mod:`agentgym.trajectory.index`, so neither module imports the other's importer.
The file is msgpack: ``{"version", "file_size", "fingerprint", "episodes": [row, ...]}``.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path
from typing import Any

import msgpack

from agentgym.trajectory import format as fmt

INDEX_VERSION = 1
_HEAD_BYTES = 4096


def fingerprint(path: str | os.PathLike[str]) -> list[int]:
    """File size and CRC-32 of its first 4 KiB (the header, with its created_at and pid)."""
    with Path(path).open("rb") as f:
        head = f.read(_HEAD_BYTES)
    return [os.path.getsize(path), zlib.crc32(head)]


def index_path(path: str | os.PathLike[str]) -> Path:
    """Where the sidecar index of ``path`` lives."""
    return Path(str(path) + ".idx")


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
            and data.get("fingerprint") == fingerprint(path)
            and isinstance(data.get("episodes"), list)
            and all(_valid_row(row) for row in data["episodes"])
        ):
            return list(data["episodes"])
    except (OSError, ValueError, KeyError, TypeError, msgpack.ExtraData):
        return None
    return None


def write_index(path: str | os.PathLike[str], rows: list[dict[str, Any]], size: int) -> None:
    """Write ``rows`` as the index of ``path``, scanned when the file was ``size`` bytes long.

    Written to a temporary file and renamed, so a reader never sees half an index.
    """
    data = fmt.pack(
        {
            "version": INDEX_VERSION,
            "file_size": size,
            "fingerprint": [size, fingerprint(path)[1]],
            "episodes": rows,
        }
    )
    tmp = index_path(path).with_suffix(".idx.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, index_path(path))
