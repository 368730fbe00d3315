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
from collections.abc import Callable, Hashable, Mapping
from typing import TypeVar

K = TypeVar("K", bound=Hashable)

_TICK = os.sysconf("SC_CLK_TCK")


def interleaved(
    fns: Mapping[K, Callable[[], object]], rounds: int, *, rotate: bool = False
) -> dict[K, list[float]]:
    """Seconds each callable took, one call per round, the callables taking turns.

    A callable may return a float: seconds of its own run to leave out of its time (work it
    had to do that the row does not measure, such as the resets between timed steps).
    ``rotate`` starts each round one row later (A B C, B C A, C A B, ...), so no row always
    runs right after the same neighbour (whose garbage, caches or a load burst it would
    inherit).
    """
    names = list(fns)
    times: dict[K, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        shift = r % len(names) if rotate and names else 0
        for name in names[shift:] + names[:shift]:
            start = time.perf_counter()
            excluded = fns[name]()
            elapsed = time.perf_counter() - start
            times[name].append(elapsed - (excluded if isinstance(excluded, float) else 0.0))
    return times


def paired_delta(a: list[float], b: list[float]) -> float:
    """Median over rounds of ``a[r] - b[r]``: the cost of A over B, both from the same round
    (so a load burst that slowed one round cancels out)."""
    return statistics.median(x - y for x, y in zip(a, b, strict=True))


def min_median(samples: list[float]) -> tuple[float, float]:
    return min(samples), statistics.median(samples)


def load() -> str:
    """The machine's 1/5/15-minute load averages, for the section's footer."""
    one, five, fifteen = os.getloadavg()
    return (
        f"load average {one:.2f} / {five:.2f} / {fifteen:.2f} (1/5/15 min) on {os.cpu_count()} CPUs"
    )


def process_cpu(pid: int | str) -> tuple[int, float] | None:
    """``(parent pid, CPU seconds)`` of process ``pid``: the user + system time it has used
    so far, from ``/proc``; None once it has ended."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    # after the command name: state ppid ... utime (12th) stime (13th), in clock ticks
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / _TICK
