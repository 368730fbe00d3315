"""Streaming reader of ``.agtr`` files: frames, steps and whole episodes, with filters.

The reader never loads the whole file: it reads one frame at a time, and when grouping
frames into episodes it keeps only the episodes that have started and not yet ended.
Damage never makes it crash or hang:

* a frame whose head or payload CRC is wrong is skipped; the reader searches forward for the
  next valid frame (resynchronises) and records a :class:`Problem`;
* a frame that runs past the end of the file (a crash mid-write, or a file still being
  written by another process) ends the read and is recorded as ``"incomplete_tail"``;
* a length beyond :data:`~agentgym.trajectory.format.MAX_FRAME_BYTES` or beyond the file's
  size is never allocated;
* an intact frame with fields of the wrong type (``reward: None``) is repaired or skipped by
  :func:`~agentgym.trajectory.schema.check_frame` and recorded as a :class:`Problem`, so
  everything downstream can trust the field types.

Examples:
    >>> import agentgym.trajectory as trj
    >>> with trj.open("run.agtr") as reader:                      # doctest: +SKIP
    ...     for ep in reader.episodes(success=True, min_return=1.0):
    ...         print(ep.episode_id, ep.task_id, ep.return_, len(ep.steps))
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agentgym.text import safe_text
from agentgym.trajectory import format as fmt
from agentgym.trajectory.images import StoredImage
from agentgym.trajectory.index_file import load_index
from agentgym.trajectory.schema import check_frame

_RESYNC_CHUNK = 1 << 20
_READ_BUFFER = 1 << 18


@dataclass(frozen=True)
class Problem:
    """Something wrong found while reading: where, what kind, and details."""

    offset: int
    kind: str
    """``"corrupt_frame"`` (bad CRC, skipped), ``"undecodable"`` (CRC ok, msgpack not),
    ``"incomplete_tail"`` (a frame cut short at the end), ``"orphan_frame"`` (a step or end
    whose ``episode_start`` is missing), ``"missing_header"``, ``"invalid_frame"`` (intact
    but unusable field types, e.g. no string ``episode_id``: skipped) and ``"invalid_field"``
    (fields of the wrong type removed, the rest of the frame kept; see :mod:`.schema`)."""
    detail: str
    skipped_bytes: int = 0

    def __str__(self) -> str:
        return f"@{self.offset}: {self.kind}: {self.detail}"


@dataclass
class Episode:
    """One episode as read back: its ``episode_start``, ``step`` and ``episode_end`` frames.

    ``end`` is None for an episode the file does not finish (a crash, or still recording).
    """

    episode_id: str
    start: dict[str, Any] | None
    steps: list[dict[str, Any]] = field(default_factory=list)
    end: dict[str, Any] | None = None

    def __repr__(self) -> str:  # the frames can be large: show a summary
        return (
            f"Episode({self.episode_id!r}, env_id={self.env_id!r}, task_id={self.task_id!r}, "
            f"steps={self.length}, return_={self.return_:.4g}, success={self.success}, "
            f"complete={self.complete})"
        )

    @property
    def complete(self) -> bool:
        return self.start is not None and self.end is not None

    @property
    def env_id(self) -> str | None:
        return (self.start or {}).get("env_id")

    @property
    def task_id(self) -> str | None:
        return (self.start or {}).get("task_id")

    @property
    def seed(self) -> int | None:
        seed = (self.start or {}).get("seed")
        return seed if seed is not None else (self.end or {}).get("seed")

    @property
    def success(self) -> bool:
        return bool((self.end or {}).get("success", False))

    @property
    def return_(self) -> float:
        if self.end is not None and "return" in self.end:
            return float(self.end["return"])
        return float(sum(s.get("reward", 0.0) for s in self.steps))

    @property
    def length(self) -> int:
        return len(self.steps)

    @property
    def rewards(self) -> list[float]:
        return [float(s.get("reward", 0.0)) for s in self.steps]


def _with_images(frame: dict[str, Any]) -> dict[str, Any]:
    obs = frame.get("observation")
    if isinstance(obs, dict) and isinstance(obs.get("images"), list):
        obs["images"] = [StoredImage.from_record(im) for im in obs["images"]]
    return frame


def _summary(ep: Episode) -> dict[str, Any]:
    """What the filters of :meth:`TrajectoryReader.episodes` look at, from the frames."""
    return {
        "task_id": ep.task_id,
        "env_id": ep.env_id,
        "success": ep.success,
        "return": ep.return_,
    }


@dataclass(frozen=True)
class _Filter:
    """The filters of :meth:`TrajectoryReader.episodes` (None: not filtered on)."""

    task_id: str | None = None
    env_id: str | None = None
    success: bool | None = None
    min_return: float | None = None
    max_return: float | None = None

    @property
    def by_source(self) -> bool:
        """Filters on what the ``episode_start`` says (task, env)."""
        return self.task_id is not None or self.env_id is not None

    @property
    def by_outcome(self) -> bool:
        """Filters on what the ``episode_end`` says (success, return)."""
        return (
            self.success is not None or self.min_return is not None or self.max_return is not None
        )

    def outcome_only(self) -> _Filter:
        return replace(self, task_id=None, env_id=None)

    def matches(self, summary: Mapping[str, Any]) -> bool:
        """Whether an episode's :func:`_summary` (or an index row) passes every filter."""
        if self.task_id is not None and summary.get("task_id") != self.task_id:
            return False
        if self.env_id is not None and summary.get("env_id") != self.env_id:
            return False
        if self.success is not None and bool(summary.get("success")) != self.success:
            return False
        ret = summary.get("return")
        if self.min_return is not None and (ret is None or ret < self.min_return):
            return False
        return not (self.max_return is not None and (ret is None or ret > self.max_return))


class TrajectoryReader:
    """Read one ``.agtr`` file. Open it with :func:`agentgym.trajectory.open`.

    ``problems`` lists what was skipped or cut short during the reads so far; check it (or
    ``agentgym view``/``replay``, which report it) after iterating.
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        if not self.path.exists():
            raise fmt.TrajectoryNotFoundError(
                f"no trajectory file at {self.path}; record one with agentgym run --record FILE"
            )
        # A large read buffer: sequential iteration then costs one read system call per
        # 256 KiB instead of two per frame (the seeks stay inside the buffer).
        self._f = self.path.open("rb", buffering=_READ_BUFFER)
        try:
            self.schema = fmt.check_preamble(self._f.read(fmt.PREAMBLE.size), str(self.path))
        except Exception:
            self._f.close()
            raise
        self.problems: list[Problem] = []
        self.last_frame_end = fmt.PREAMBLE.size
        """Byte offset just past the last intact frame read so far."""
        self._seen_problems: set[tuple[int, str]] = set()
        self.header: dict[str, Any] = {}
        for _, frame in self._iter_raw(fmt.PREAMBLE.size, limit=1):
            if frame.get("type") == "header":
                self.header = frame
            else:
                self._problem(fmt.PREAMBLE.size, "missing_header", "first frame is not a header")

    # ---- low level -------------------------------------------------------------------------

    def _problem(self, offset: int, kind: str, detail: str, skipped: int = 0) -> None:
        if (offset, kind) not in self._seen_problems:
            self._seen_problems.add((offset, kind))
            self.problems.append(Problem(offset, kind, detail, skipped))

    def _size(self) -> int:
        return os.fstat(self._f.fileno()).st_size

    def _frame_at(self, pos: int, size: int) -> tuple[str, int, bytes | None]:
        """Classify the frame at ``pos``: ("ok", length, payload) / ("short"|"bad"|"crc", ...)."""
        if pos + fmt.FRAME_HEAD.size > size:
            return "short", 0, None
        self._f.seek(pos)
        head = fmt.parse_frame_head(self._f.read(fmt.FRAME_HEAD.size))
        if head is None:
            return "bad", 0, None
        length, crc = head
        if pos + fmt.FRAME_HEAD.size + length > size:
            return "short", length, None
        payload = self._f.read(length)
        if len(payload) != length:
            return "short", length, None
        if fmt.crc32(payload) != crc:
            return "crc", length, None
        return "ok", length, payload

    def _resync(self, start: int, size: int) -> int | None:
        """Offset of the next intact frame after ``start``, or None if there is none."""
        pos = start
        while pos < size:
            self._f.seek(pos)
            chunk = self._f.read(min(_RESYNC_CHUNK, size - pos) + len(fmt.FRAME_MARK) - 1)
            idx = chunk.find(fmt.FRAME_MARK)
            while idx != -1:
                cand = pos + idx
                status, _, _ = self._frame_at(cand, size)
                if status == "ok":
                    return cand
                idx = chunk.find(fmt.FRAME_MARK, idx + 1)
            pos += _RESYNC_CHUNK
        return None

    def _iter_raw(self, pos: int, limit: int | None = None) -> Iterator[tuple[int, dict]]:
        count = 0
        size = self._size()
        while limit is None or count < limit:
            status, length, payload = self._frame_at(pos, size)
            if status == "short":
                size = self._size()  # the file may have grown (a live writer)
                status, length, payload = self._frame_at(pos, size)
            if status == "short":
                if pos >= size:
                    return
                # A frame running past the end is a torn/live tail, unless intact frames
                # follow it: then its head lied about the length, and it is damage.
                nxt = self._resync(pos + 1, size) if length else None
                if nxt is None:
                    self._problem(
                        pos,
                        "incomplete_tail",
                        f"{size - pos} bytes at the end do not form a whole frame "
                        "(a crash mid-write, or the file is still being written)",
                        size - pos,
                    )
                    return
                self._problem(
                    pos,
                    "corrupt_frame",
                    f"frame claims {length} bytes, past the end of the file; skipped "
                    f"{nxt - pos} bytes, resynchronised at offset {nxt}",
                    nxt - pos,
                )
                pos = nxt
                continue
            if status in ("bad", "crc"):
                nxt = self._resync(pos + 1, size)
                end = size if nxt is None else nxt
                what = "frame head" if status == "bad" else "payload CRC"
                self._problem(
                    pos,
                    "corrupt_frame",
                    f"bad {what}; skipped {end - pos} bytes"
                    + ("" if nxt is None else f", resynchronised at offset {nxt}"),
                    end - pos,
                )
                if nxt is None:
                    return
                pos = nxt
                continue
            assert payload is not None
            frame_pos = pos
            pos += fmt.FRAME_HEAD.size + length
            self.last_frame_end = pos
            try:
                frame = fmt.unpack(payload)
            except Exception as exc:
                self._problem(frame_pos, "undecodable", f"{type(exc).__name__}: {exc}"[:200])
                continue
            if not isinstance(frame, dict):
                self._problem(frame_pos, "undecodable", "payload is not a map")
                continue
            checked, issues = check_frame(frame)
            if issues:
                kind = "invalid_frame" if checked is None else "invalid_field"
                self._problem(frame_pos, kind, "; ".join(issues)[:500])
            if checked is None:
                continue
            frame = checked
            count += 1
            yield frame_pos, frame

    def read_frame(self, offset: int) -> dict[str, Any]:
        """The frame at a known offset (from the index)."""
        frame = self._intact_frame_at(offset)
        if frame is None:
            raise fmt.TrajectoryFormatError(f"{self.path}: no intact frame at offset {offset}")
        return _with_images(frame)

    def _intact_frame_at(self, offset: int) -> dict[str, Any] | None:
        """The checked frame starting exactly at ``offset``, or None (damage, not a frame).

        Records no problems: the caller falls back to a scan, which reports them once.
        """
        if not isinstance(offset, int) or offset < fmt.PREAMBLE.size:
            return None
        status, _, payload = self._frame_at(offset, self._size())
        if status != "ok" or payload is None:
            return None
        try:
            frame = fmt.unpack(payload)
        except Exception:
            return None
        if not isinstance(frame, dict):
            return None
        checked, _ = check_frame(frame)
        return checked

    # ---- public iteration ------------------------------------------------------------------

    def frames(self, types: tuple[str, ...] | None = None) -> Iterator[dict[str, Any]]:
        """Every event frame after the header, in file order (``types`` filters by type)."""
        for _, frame in self._iter_raw(fmt.PREAMBLE.size):
            kind = frame.get("type")
            if kind == "header":
                continue
            if types is None or kind in types:
                yield _with_images(frame)

    def frames_with_offsets(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """Like :meth:`frames` (all types, header included) with each frame's byte offset."""
        yield from self._iter_raw(fmt.PREAMBLE.size)

    def steps(self, episode_id: str | None = None) -> Iterator[dict[str, Any]]:
        """Step frames, optionally of one episode."""
        for frame in self.frames(("step",)):
            if episode_id is None or frame.get("episode_id") == episode_id:
                yield frame

    def episodes(
        self,
        *,
        task_id: str | None = None,
        env_id: str | None = None,
        success: bool | None = None,
        min_return: float | None = None,
        max_return: float | None = None,
        include_incomplete: bool = True,
        use_index: bool = True,
    ) -> Iterator[Episode]:
        """Episodes in the order they end (unfinished ones last), filtered.

        Only episodes in flight are held in memory. With a fresh sidecar index (see
        :func:`agentgym.trajectory.index.load_or_build`) episodes failing a success/return
        filter are not even buffered. ``include_incomplete`` yields episodes without an
        ``episode_end`` at the end (they match a filter on success/return never).
        """
        filt = _Filter(task_id, env_id, success, min_return, max_return)
        wanted = self._index_wanted(filt) if use_index and filt.by_outcome else None
        live: dict[str, Episode] = {}
        skipped: set[str] = set()
        # Episodes the index says fail the filter are not buffered, only their frame offsets
        # are kept (see _unbuffered).
        held: dict[str, list[int]] = {}
        for offset, frame in self._iter_raw(fmt.PREAMBLE.size):
            eid = frame.get("episode_id")
            if frame.get("type") == "header" or not isinstance(eid, str) or eid in skipped:
                continue
            if wanted is not None and eid not in wanted:
                ep = self._unbuffered(offset, frame, held, filt)
            else:
                ep = self._buffered(offset, frame, live, skipped, filt)
            if ep is not None:
                yield ep
        if include_incomplete and not filt.by_outcome:
            yield from live.values()

    def _index_wanted(self, filt: _Filter) -> set[str] | None:
        """Ids of the episodes whose fresh sidecar index row passes ``filt`` (None: no index)."""
        idx = load_index(self.path)
        if idx is None:
            return None
        return {e["episode_id"] for e in idx if filt.matches(e)}

    def _buffered(
        self,
        offset: int,
        frame: dict[str, Any],
        live: dict[str, Episode],
        skipped: set[str],
        filt: _Filter,
    ) -> Episode | None:
        """Add ``frame`` to the episodes in flight (``live``); the episode it ends, if that
        passes ``filt``. Episodes whose start fails the task/env filter go to ``skipped``."""
        kind, eid = frame.get("type"), frame["episode_id"]
        if kind == "episode_start":
            if (filt.task_id is not None and frame.get("task_id") != filt.task_id) or (
                filt.env_id is not None and frame.get("env_id") != filt.env_id
            ):
                skipped.add(eid)
            else:
                live[eid] = Episode(eid, _with_images(frame))
        elif kind == "step":
            ep = live.get(eid)
            if ep is None:
                if filt.by_source:
                    return None
                self._problem(offset, "orphan_frame", f"step of unknown episode {eid}")
                ep = live[eid] = Episode(eid, None)
            ep.steps.append(_with_images(frame))
        elif kind == "episode_end":
            ep = live.pop(eid, None)
            if ep is None:
                if not filt.by_source:
                    self._problem(offset, "orphan_frame", f"end of unknown episode {eid}")
                return None
            ep.end = frame
            return ep if filt.matches(_summary(ep)) else None
        return None

    def _unbuffered(
        self, offset: int, frame: dict[str, Any], held: dict[str, list[int]], filt: _Filter
    ) -> Episode | None:
        """A frame of an episode the index rules out: only its offset is kept (in ``held``).

        The index is a cache, so at the episode's end its real ``episode_end`` is checked, and
        the episode is re-read from those offsets (and returned, if it passes ``filt``) when
        the index was wrong about it.
        """
        eid = frame["episode_id"]
        if frame.get("type") != "episode_end":
            held.setdefault(eid, []).append(offset)
            return None
        offsets = held.pop(eid, [])
        end_only = _summary(Episode(eid, None, end=frame))
        if "return" in frame and not filt.outcome_only().matches(end_only):
            return None  # the index was right: the end frame fails the filter
        ep = self._index_missed(offsets, frame, eid)
        return ep if ep is not None and filt.matches(_summary(ep)) else None

    def _index_missed(self, offsets: list[int], end: dict[str, Any], eid: str) -> Episode | None:
        """The episode ``eid`` re-read from the offsets of its unbuffered frames."""
        start = self._intact_frame_at(offsets[0]) if offsets else None
        if start is None or start.get("type") != "episode_start":
            return None  # an orphan end: the scan reports those only when buffering
        ep = Episode(eid, _with_images(start), end=_with_images(end))
        for offset in offsets[1:]:
            frame = self._intact_frame_at(offset)
            if frame is not None and frame.get("type") == "step":
                ep.steps.append(_with_images(frame))
        return ep

    def _episode_from_offsets(self, episode_id: str, offsets: Any) -> Episode | None:
        """The episode read from an index row's offsets, or None unless the frames prove it.

        The row must point at intact frames of this episode only: one start, then steps
        numbered 1..n, then an end whose ``length`` is n. Anything else (a frame damaged
        since the index was built, a row that lies or leaves frames out, an unfinished
        episode) returns None, and the caller scans the file like a reader without index.
        """
        if not isinstance(offsets, list) or len(offsets) < 2:
            return None
        frames = []
        for offset in offsets:
            frame = self._intact_frame_at(offset)
            if frame is None or frame.get("episode_id") != episode_id:
                return None
            frames.append(frame)
        start, steps, end = frames[0], frames[1:-1], frames[-1]
        if (
            start.get("type") != "episode_start"
            or end.get("type") != "episode_end"
            or any(f.get("type") != "step" for f in steps)
            or [f.get("step") for f in steps] != list(range(1, len(steps) + 1))
            or end.get("length") != len(steps)
        ):
            return None
        return Episode(
            episode_id, _with_images(start), [_with_images(f) for f in steps], _with_images(end)
        )

    def episode(self, episode_id: str) -> Episode:
        """One episode by id (uses the sidecar index when fresh, else one scan).

        The index is trusted only as far as the frames it points at confirm it; otherwise
        the file is scanned, so damage is skipped exactly as without an index.
        """
        idx = load_index(self.path)
        if idx is not None:
            for entry in idx:
                if entry["episode_id"] == episode_id:
                    found = self._episode_from_offsets(episode_id, entry["offsets"])
                    if found is not None:
                        return found
                    break
        for ep in self.episodes():
            if ep.episode_id == episode_id:
                return ep
        raise KeyError(f"no episode {episode_id!r} in {self.path}")

    # ---- lifetime --------------------------------------------------------------------------

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> TrajectoryReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def describe_problems(problems: list[Problem], limit: int = 10) -> str:
    """A short report of what a read skipped or repaired ('' when nothing), for CLI output."""
    if not problems:
        return ""
    lines = [f"{len(problems)} problem(s) in the file; the rest was read:"]
    lines += [f"  {p}" for p in problems[:limit]]
    if len(problems) > limit:
        lines.append(f"  ... and {len(problems) - limit} more")
    return safe_text("\n".join(lines))


def open(path: str | os.PathLike[str]) -> TrajectoryReader:
    """Open an ``.agtr`` file for streaming reads (raises a clear error if it is not one)."""
    return TrajectoryReader(path)
