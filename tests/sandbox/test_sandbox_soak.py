"""A smaller run of the hostile soak (benchmarks/bench_sandbox.py runs 10,000 calls over 128
sessions): many concurrent sessions, hostile cells mixed in, nothing left behind."""

from __future__ import annotations

import os
import sys

import pytest
from agentgym.simulators.sandbox import SandboxPool

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from benchmarks.bench_sandbox import soak  # the soak lives with its benchmark

pytestmark = [pytest.mark.sandbox]


@pytest.mark.slow
def test_soak_leaves_nothing_and_no_session_reads_another(pool: SandboxPool) -> None:
    res = soak(pool, sessions=40, execs=500, seed=1)
    assert res["execs"] == 500
    assert res["leaks"] == [], res["leaks"][:5]
    assert res["left"] == {
        "processes": 0,
        "work_dirs": 0,
        "sessions": 0,
        "session_cgroups": 0,
        "host_cgroups": 0,
        "jail_processes": 0,
    }
    assert res["restarts"] == 0, "a hostile cell took a whole worker down"
    hostile = {k for k in res["counts"] if k.startswith("hostile:")}
    assert len(hostile) >= 5, res["counts"]
