"""Every built task holds in the jail: FAIL_TO_PASS fails before the gold patch and passes
after it, PASS_TO_PASS passes both times (a fixed sample here; more in the slow test)."""

from __future__ import annotations

import numpy as np
import pytest
from agentgym.simulators.repo import grade, load_table

pytestmark = pytest.mark.sandbox

TABLE = load_table()


def _sample(count: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    picked = []
    for split in ("train", "test"):
        ids = sorted(TABLE.ids(split))
        picked += [ids[int(i)] for i in rng.choice(len(ids), count // 2, replace=False)]
    return picked


def _check(pool, tid: str) -> None:
    task = TABLE.task(tid)
    before = grade(pool, task, {p: t.encode() for p, t in task.starting_files.items()})
    assert before.status == "ok", tid
    assert before.f2p_passed == 0, f"{tid}: a FAIL_TO_PASS test passes before the fix"
    assert before.p2p_passed == len(task.pass_to_pass), f"{tid}: PASS_TO_PASS broken before"
    after = grade(pool, task, {p: t.encode() for p, t in task.reference_files.items()})
    assert after.status == "ok" and after.resolved, f"{tid}: the gold patch does not resolve it"


@pytest.mark.parametrize("tid", _sample(4, seed=0))
def test_a_sample_of_tasks_holds_in_the_jail(pool, tid):
    _check(pool, tid)


@pytest.mark.slow
@pytest.mark.parametrize("tid", _sample(40, seed=1))
def test_more_tasks_hold_in_the_jail(pool, tid):
    _check(pool, tid)
