"""Logging that cannot flood: each kind of message at most once per period, with a count.

A server under attack or overload repeats the same failure thousands of times a second
(a failed ``accept``, a refused session, a timed-out call); writing each one filled disks
(about 97 MB in 30 s). :class:`RateLimitedLog` writes the first of a kind, then at most one
per ``every_s`` seconds, saying how many were left out in between.

Examples:
    >>> import logging
    >>> log = RateLimitedLog(logging.getLogger("demo"), every_s=60)
    >>> [log.warning("refused", "refused %d", i) for i in range(3)]
    [True, False, False]
    >>> log.left_out["refused"]
    2
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any


class RateLimitedLog:
    """``logger`` with each message kind logged at most once per ``every_s`` seconds."""

    def __init__(self, logger: logging.Logger, every_s: float = 10.0, max_kinds: int = 256):
        self.logger = logger
        self.every_s = float(every_s)
        self.max_kinds = max_kinds
        self._last: dict[str, float] = {}
        self.left_out: dict[str, int] = {}

    def log(self, level: int, kind: str, msg: str, *args: Any, exc_info: Any = None) -> bool:
        """Log ``msg % args`` unless ``kind`` was logged in the last ``every_s``; True if logged."""
        now = time.monotonic()
        last = self._last.get(kind)
        if last is not None and now - last < self.every_s:
            self.left_out[kind] = self.left_out.get(kind, 0) + 1
            return False
        if len(self._last) >= self.max_kinds and kind not in self._last:
            self._last.clear()  # many distinct kinds: forget them rather than grow
        self._last[kind] = now
        skipped = self.left_out.pop(kind, 0)
        if skipped:
            msg += f" (and {skipped} more like it in the last {self.every_s:g} s)"
        self.logger.log(level, msg, *args, exc_info=exc_info)
        return True

    def warning(self, kind: str, msg: str, *args: Any) -> bool:
        return self.log(logging.WARNING, kind, msg, *args)

    def error(self, kind: str, msg: str, *args: Any, exc_info: Any = None) -> bool:
        return self.log(logging.ERROR, kind, msg, *args, exc_info=exc_info)


class ProtocolLog:
    """A stand-in for the ``logging.Logger`` of uvicorn's protocol objects (``self.logger``),
    writing through one shared :class:`RateLimitedLog`.

    Protocol errors are what clients cause (invalid UTF-8 in a text frame, a malformed request
    head): each is one line, without a traceback, and each kind is written at most once per
    ``every_s`` seconds however many connections repeat it. uvicorn wrote a full traceback for
    every invalid UTF-8 frame, outside any limit (394 KB for 800 connections). Errors logged
    with an explicit ``exc_info`` (the app raised: a server bug) keep their traceback, under the
    same limit. Messages below the logger's level cost nothing.
    """

    def __init__(self, logger: logging.Logger, every_s: float = 10.0):
        self.logger = logger
        self._log = RateLimitedLog(logger, every_s)

    @property
    def level(self) -> int:
        return self.logger.level

    @property
    def left_out(self) -> dict[str, int]:
        """Messages of each kind (their format string) that the limit left out so far."""
        return self._log.left_out

    def log(self, level: int, msg: str, *args: Any, exc_info: Any = None, **_: Any) -> None:
        if self.logger.isEnabledFor(level):
            self._log.log(level, msg, msg, *args, exc_info=exc_info)

    def debug(self, msg: str, *args: Any, **kw: Any) -> None:
        self.log(logging.DEBUG, msg, *args, **kw)

    def info(self, msg: str, *args: Any, **kw: Any) -> None:
        self.log(logging.INFO, msg, *args, **kw)

    def warning(self, msg: str, *args: Any, **kw: Any) -> None:
        self.log(logging.WARNING, msg, *args, **kw)

    def error(self, msg: str, *args: Any, **kw: Any) -> None:
        self.log(logging.ERROR, msg, *args, **kw)

    def exception(self, msg: str, *args: Any, **_: Any) -> None:
        """One line naming the exception being handled, never its traceback."""
        if not self.logger.isEnabledFor(logging.ERROR):
            return
        exc = sys.exc_info()[1]
        line = (msg % args if args else msg).rstrip()
        if exc is not None:
            line += f" ({type(exc).__name__}: {' '.join(str(exc).split())})"
        self._log.log(logging.ERROR, msg, "%s", line)
