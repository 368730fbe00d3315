"""Fault-injection soak of the rollout engine at CI scale (issue 38).

A few hundred episodes through ``collect`` while calls are cancelled at random moments
(some twice), the model server answers 500, drops connections, stalls and refuses prompts
(HTTP 400), env steps crash or hang, and - per source - pool worker processes are killed
or the ``agentgym serve`` server restarts under its sessions. Afterwards every invariant
of :meth:`tests.rollout.soak.SoakReport.problems` must hold: each seed drawn handed back
in exactly one group, each attempt whole or failed with its cause and reported once, no
step after an episode ended, every env, session and worker freed. The full-scale run is
``python -m benchmarks.bench_rollout --soak``.
"""

from __future__ import annotations

import dataclasses

import pytest

from tests.rollout.soak import SoakSpec, run_soak, spec_for

pytestmark = pytest.mark.slow

CI = {
    # source: (episodes, changes to its spec): fault rates high enough that each fault
    # kind strikes in a run this short
    "local": (300, {"env_crash": 0.01, "env_hang": 0.003, "cancel": 0.4}),
    "serve": (120, {"cancel": 0.4, "restart_every_s": 4.0}),
    "pool": (64, {"group_size": 2, "in_flight": 4, "workers": 4, "kill_every_s": 3.0}),
}


@pytest.mark.parametrize("source", sorted(CI))
def test_soak_keeps_every_invariant(source: str) -> None:
    episodes, changes = CI[source]
    spec: SoakSpec = dataclasses.replace(spec_for(source, episodes), **changes)
    report = run_soak(spec)
    assert report.problems() == [], report.summary()
    assert len(report.groups) == episodes // spec.group_size and report.twice == []
    assert report.cancelled >= 1 and report.episodes > 0, report.summary()
    if source == "local":
        assert report.causes["env_error"] >= 1, report.summary()
    if source == "pool":
        assert report.killed_workers >= 1, report.summary()
    if source == "serve":
        assert report.server_restarts >= 1, report.summary()
