"""Timing helpers shared by the benchmark modules.

Every comparison in BENCHMARKS.md times its rows *interleaved*: round after round, each
candidate runs once in turn (A B C A B C ...), so a load spike on the shared machine falls on
all rows alike instead of on whichever row happened to run then. Sections report the minimum
(the least disturbed run) and the median over rounds.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Mapping


def interleaved(fns: Mapping[str, Callable[[], object]], rounds: int) -> dict[str, list[float]]:
    """Seconds each callable took, one call per round, the callables taking turns.

    A callable may return a float: seconds of its own run to leave out of its time (work it
    had to do that the row does not measure, such as the resets between timed steps).
    """
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            start = time.perf_counter()
            excluded = fn()
            elapsed = time.perf_counter() - start
            times[name].append(elapsed - (excluded if isinstance(excluded, float) else 0.0))
    return times


def min_median(samples: list[float]) -> tuple[float, float]:
    return min(samples), statistics.median(samples)


def load() -> str:
    """The machine's 1/5/15-minute load averages, for the section's footer."""
    one, five, fifteen = os.getloadavg()
    return (
        f"load average {one:.2f} / {five:.2f} / {fifteen:.2f} (1/5/15 min) on {os.cpu_count()} CPUs"
    )
