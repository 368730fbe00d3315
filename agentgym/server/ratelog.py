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
