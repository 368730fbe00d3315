"""``TrajectoryWriter``: appends frames to an ``.agtr`` file, crash-safely and thread-safely.

Each frame goes to the OS in ONE unbuffered ``write`` call (then an optional ``fsync``), so
a process killed at any moment leaves every earlier frame intact and at most one torn frame
at the end. Reopening a file for append finds the last good frame boundary and truncates
the torn tail before writing.

Many writers, one file (processes or threads): open every writer with ``mode="a"``. The file
is opened ``O_APPEND`` and every frame is written while holding an exclusive ``flock`` on it,
so frames of different writers never overlap or overwrite each other; each lands whole at the
end of the file. The preamble and header are written once, by whichever writer creates the
file, and the torn-tail repair runs under the same lock, so it can never cut a frame another
writer is in the middle of. ``mode="w"`` truncates the file and is for one writer only.
``flock`` works on local filesystems; on network filesystems give each writer its own file.

A writer survives ``fork`` (``multiprocessing`` with the fork start method, a framework
that builds envs and then forks workers): the file is always opened ``O_APPEND``, so every
frame lands at the end whoever writes it; after a fork both parent and child lock every
frame, and the child writes through its own newly opened descriptor (a ``flock`` is shared
by every process holding the same open file, so it would not keep parent and child apart)
and drops the frames still in the inherited buffer (they are the parent's to write).

Batching (opt-in, ``buffer_bytes > 0``): frames collect in memory and go to the OS in one
``write`` when the buffer reaches ``buffer_bytes``, on :meth:`TrajectoryWriter.flush` (the
recorder calls it at every episode end) and on close. It saves one system call per frame
(about 2 µs). The crash guarantee becomes: a killed process loses the frames still in the
buffer (fewer than ``buffer_bytes`` plus one frame, all written after the last flush);
everything flushed before is intact, and the file never holds a partial frame except the
one torn ``write`` at the end, as without batching.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import logging
import os
import sys
import threading
import weakref
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from agentgym.trajectory import format as fmt

logger = logging.getLogger(__name__)

_PACKAGES = ("numpy", "gymnasium", "msgpack", "pillow", "torch", "transformers")


def package_versions() -> dict[str, str]:
    """Versions of Python and of the packages that shape observations (installed ones only)."""
    import importlib.metadata as md

    out = {"python": sys.version.split()[0]}
    for name in _PACKAGES:
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            continue
    return out


def make_header(env_id: str | None = None, extra: Mapping[str, Any] | None = None) -> dict:
    """The ``header`` frame payload."""
    from agentgym import __version__

    env_version = None
    if env_id and "-v" in env_id:
        env_version = env_id.rsplit("-v", 1)[1]
    return {
        "type": "header",
        "schema": [fmt.SCHEMA_MAJOR, fmt.SCHEMA_MINOR],
        "agentgym_version": __version__,
        "env_id": env_id,
        "env_version": env_version,
        "packages": package_versions(),
        "created_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds"),
        "writer": {"pid": os.getpid(), "platform": sys.platform},
        **dict(extra or {}),
    }


def scan_good_end(path: str | os.PathLike[str]) -> tuple[int, int]:
    """(offset just past the last intact frame, number of intact frames) of an existing file.

    Damage in the middle is skipped (the reader resynchronises), so appending after a crash
    cuts only the torn tail, never intact frames that follow a damaged one.
    """
    from agentgym.trajectory.reader import TrajectoryReader

    frames = 0
    with TrajectoryReader(path) as reader:
        for _ in reader.frames_with_offsets():
            frames += 1
        return reader.last_frame_end, frames


class TrajectoryWriter:
    """Append frames to ``path``.

    Args:
        path: The ``.agtr`` file.
        mode: ``"w"`` creates or overwrites (one writer); ``"a"`` appends (creating the file
            if needed), truncating a torn tail left by a crash first; any number of ``"a"``
            writers, in any processes, may share one file (see the module docstring).
        fsync: ``os.fsync`` after every frame (survives power loss, costs ~ms per frame);
            without it each frame is still handed to the OS at once (survives a process kill).
        env_id: Stored in the header of a new file.
        header_extra: More header fields (e.g. ``{"run": "exp-12"}``).
        buffer_bytes: 0 (default) hands every frame to the OS at once: a crash loses at most
            the frame being written. Above 0, frames are batched in memory up to this many
            bytes and written together (see the module docstring for what a crash can lose).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        mode: str = "w",
        *,
        fsync: bool = False,
        env_id: str | None = None,
        header_extra: Mapping[str, Any] | None = None,
        buffer_bytes: int = 0,
    ):
        if mode not in ("w", "a"):
            raise fmt.TrajectoryFormatError(f"mode must be 'w' or 'a', got {mode!r}.")
        self.path = Path(path)
        self.fsync = fsync
        if not isinstance(buffer_bytes, int) or buffer_bytes < 0:
            raise fmt.TrajectoryFormatError(
                f"buffer_bytes must be an integer >= 0 (0 = write every frame at once), "
                f"got {buffer_bytes!r}."
            )
        self.buffer_bytes = buffer_bytes
        self._buffer = bytearray()
        self._lock = threading.Lock()
        self.truncated_bytes = 0
        self.frames_written = 0
        self.bytes_written = 0
        self._closed = False
        self._shared = mode == "a"
        self._forked = False
        _LIVE_WRITERS.add(self)
        if not self._shared:
            # O_APPEND here too: should the process fork, frames still land at the end.
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND
            self._fd = os.open(self.path, flags, 0o644)
            self._write_all(fmt.preamble_bytes())
            self.write(make_header(env_id, header_extra))
            self.flush()  # the header is on disk even when frames are batched
            return
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            with self._file_lock():
                size = os.fstat(self._fd).st_size
                if size == 0:  # this writer creates the file
                    self._write_all(fmt.preamble_bytes())
                    self._write_all(fmt.frame_bytes(fmt.pack(make_header(env_id, header_extra))))
                    self.frames_written += 1
                    return
                good_end, _ = scan_good_end(self.path)
                if good_end < size:
                    self.truncated_bytes = size - good_end
                    logger.warning(
                        "%s: truncating %d bytes of torn/damaged tail before appending",
                        self.path,
                        self.truncated_bytes,
                    )
                    os.ftruncate(self._fd, good_end)
        except BaseException:
            os.close(self._fd)
            raise

    @contextlib.contextmanager
    def _file_lock(self) -> Iterator[None]:
        """Hold the exclusive ``flock`` shared by every append-mode writer of this file."""
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _write_all(self, data: bytes | bytearray) -> None:
        n = os.write(self._fd, data)
        if n < len(data):  # rare: a partial write (signal, full disk); finish it
            view = memoryview(data)[n:]
            while view:
                view = view[os.write(self._fd, view) :]

    def write(self, payload: Mapping[str, Any]) -> int:
        """Encode and append one frame; returns its size in bytes."""
        return self.write_payload(fmt.pack(payload))

    def write_payload(self, packed: bytes) -> int:
        """Append one frame whose payload is already msgpack-encoded (see :func:`.format.pack`).

        Encoding happens outside the lock, so threads sharing a writer overlap their encoding.
        """
        data = fmt.frame_bytes(packed)
        with self._lock:
            if self._closed:
                raise fmt.TrajectoryFormatError(f"{self.path}: write() after close().")
            if self.buffer_bytes:
                self._buffer += data
                if len(self._buffer) >= self.buffer_bytes:
                    self._flush_locked()
            else:
                self._emit(data)
            self.frames_written += 1
            self.bytes_written += len(data)
        return len(data)

    def _after_fork_in_child(self) -> None:
        """Runs in a forked child: fresh lock, no inherited frames, own descriptor later."""
        self._lock = threading.Lock()  # another thread may have held it at the fork
        self._buffer = bytearray()  # the parent writes these frames itself
        self._forked = True
        self._shared = True

    def _after_fork_in_parent(self) -> None:
        self._shared = True  # a child may write to the file now: lock every frame

    def _own_descriptor(self) -> None:
        """First write in a forked child: open the file again, so ``flock`` excludes the
        parent (a lock belongs to the open file, which the child shared with the parent)."""
        self._forked = False
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        except OSError:  # the path is gone: keep the inherited descriptor (O_APPEND too)
            return
        os.close(self._fd)
        self._fd = fd

    def _emit(self, data: bytes | bytearray) -> None:
        if self._forked:
            self._own_descriptor()
        if self._shared:
            with self._file_lock():
                self._write_all(data)
        else:
            self._write_all(data)
        if self.fsync:
            os.fsync(self._fd)

    def _flush_locked(self) -> None:
        if self._buffer:
            data, self._buffer = self._buffer, bytearray()
            self._emit(data)

    def flush(self) -> None:
        """Hand the batched frames to the OS now (a no-op without ``buffer_bytes``)."""
        with self._lock:
            if not self._closed:
                self._flush_locked()

    def close(self) -> None:
        """Flush to disk and close. Safe to call more than once."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._flush_locked()
            finally:
                with contextlib.suppress(OSError):  # e.g. a pipe
                    os.fsync(self._fd)
                os.close(self._fd)

    def __enter__(self) -> TrajectoryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_LIVE_WRITERS: weakref.WeakSet[TrajectoryWriter] = weakref.WeakSet()


def _writers_after_fork_in_child() -> None:
    for writer in list(_LIVE_WRITERS):
        writer._after_fork_in_child()


def _writers_after_fork_in_parent() -> None:
    for writer in list(_LIVE_WRITERS):
        writer._after_fork_in_parent()


os.register_at_fork(
    after_in_child=_writers_after_fork_in_child, after_in_parent=_writers_after_fork_in_parent
)
