"""The garbage collector's settings while a server app runs.

At thousands of sessions, CPython's cyclic collector was about a fifth of the server's CPU
(Sokoban-Tiny, 1,024 WebSocket sessions): every 700 net container allocations it walks the
young objects, and its full passes walk every session's env. Nothing the server does per
message needs cycles collected promptly (its objects die by reference counting), so while at
least one app runs:

* the heap that exists when serving starts (modules, the app) is frozen out of the
  collector's view (:func:`gc.freeze`), so full passes only walk what came after it;
* the youngest generation is collected every 10,000 net allocations instead of 700.

When the last running app stops, the previous thresholds come back and the frozen objects
are handed back to the collector, so a process that served in a thread (tests, notebooks)
ends as it began. Thresholds already set higher by the user are kept, and a process that
froze objects itself (a pre-fork server) keeps its own freeze, untouched.
"""

from __future__ import annotations

import gc
import threading

YOUNG_THRESHOLD = 10_000
"""Net container allocations between two young collections while serving (CPython: 700)."""

_lock = threading.Lock()
_running = 0
_saved: tuple[int, ...] | None = None
_we_froze = False  # False when the process had frozen objects of its own: left as they are


def serving_started() -> None:
    """An app starts serving: the first one applies the serving settings."""
    global _running, _saved, _we_froze
    with _lock:
        _running += 1
        if _running > 1:
            return
        _saved = gc.get_threshold()
        _we_froze = gc.get_freeze_count() == 0
        if _we_froze:
            gc.freeze()
        if _saved[0] < YOUNG_THRESHOLD:
            gc.set_threshold(YOUNG_THRESHOLD, *_saved[1:])


def serving_stopped() -> None:
    """An app stopped serving: the last one restores the collector as it was."""
    global _running, _saved
    with _lock:
        if _running == 0:
            return
        _running -= 1
        if _running or _saved is None:
            return
        gc.set_threshold(*_saved)
        if _we_froze:
            gc.unfreeze()
        _saved = None
