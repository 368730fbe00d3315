"""Many CodeMath sessions at once, some hostile, through the env API (issues 21 and 38, reduced).

The full-scale runs (1,024 sessions; 256 with the issue 38 hostile kinds) are ``python -m
benchmarks sandbox_scale``; this runs the same harness,
:func:`benchmarks.bench_sandbox_scale.scale_run`, at a size CI can afford: 40 sessions,
every fourth hostile, so each hostile kind runs once.
"""

from __future__ import annotations

import pytest
from agentgym.simulators.sandbox import SandboxPool

from benchmarks.bench_sandbox_scale import HOSTILE, kinds_section, scale_run

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]


def test_hostile_sessions_cost_benign_ones_nothing_and_leave_nothing(pool: SandboxPool) -> None:
    every = 4
    sessions = every * len(HOSTILE)  # each hostile kind once
    out = scale_run(pool, sessions=sessions, hostile_every=every, cells=3, cell_timeout=2.0)
    assert out["errors"] == []
    assert len(out["benign_cells"]) == 3 * out["benign"] == 3 * (sessions - len(HOSTILE))
    assert {k.split(":")[0] for k in out["hostile_status"]} == set(HOSTILE)
    # what hostile cells got: stopped at their limit, or refused
    assert out["hostile_status"].get("sleep: tool failed") == 3
    assert out["hostile_status"].get("spin: tool failed") == 3
    # the spy ran its three cells and found nothing of anyone else, the lock byte included
    assert out["spy_reports"] == 3
    assert out["crossing_bytes"] == 0
    assert out["leftovers"] == {
        "sessions": 0, "lineages": 0, "workdirs": 0, "cgroups": 0, "busy_uids": 0, "trash": 0,
        "removing": 0, "ipc_objects": 0, "uid_processes": 0,
    }  # fmt: skip
    assert out["memory_left"] < 16 << 20, out["memory_left"]


def test_one_kind_at_a_time_plays_only_that_kind(pool: SandboxPool) -> None:
    """The ``--kinds`` diagnosis gives every hostile session the one kind it is asked for."""
    out = scale_run(pool, sessions=12, hostile_every=4, cells=2, cell_timeout=2.0, kinds=["spin"])
    assert out["errors"] == []
    assert out["hostile"] == 3
    assert out["hostile_status"] == {"spin: tool failed": 6}


def test_the_kinds_section_runs_each_kind_between_alone_runs() -> None:
    """``--kinds`` at a size CI affords: its table has a row for the kind asked, its benign
    cells without error, against the median of the alone runs before and after it."""
    text = kinds_section(12, ["ipc"])
    assert "of the 2 alone runs" in text
    (row,) = [line for line in text.splitlines() if line.startswith("| ipc |")]
    assert row.startswith("| ipc | 10 + 2 | 0 |"), row
