"""The RepoFix scale benchmark at reduced scale: concurrent sessions each running pytest.

``benchmarks/bench_repo.py`` runs 256 sessions; here 12, with the same checks and no timing
assertion: every pytest call in every session is correct, and nothing is left behind.
"""

from __future__ import annotations

import pytest

from benchmarks.bench_repo import repo_scale_run

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]


def test_concurrent_sessions_each_running_pytest(pool):
    result = repo_scale_run(pool, sessions=12, runs=2, baseline_calls=2)
    assert result["errors"] == []
    assert len(result["calls"]) == 24 and len(result["resets"]) == 12
    assert len(result["alone"]) == 2 and len(result["host"]) == 2
    assert len(result["alone_opens"]) == 3
    assert result["memory_per_session"] > 0
    assert not any(result["leftovers"].values()), result["leftovers"]
