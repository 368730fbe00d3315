"""examples/learning_protocol.py with the word policy: shards, budgets, the model it builds.

The protocol's statistics are pinned in test_learning_protocol_stats.py; these pin what the
word-policy runs add: N shards split the RL runs with each run in exactly one shard, Tree-GRPO
at a quarter budget gets a quarter of the chains' env steps, the word policy reads the whole
episode, and the anchor statistics of the start and the final policy are the first and last
batches of the GiGPO runs.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import learning_protocol as lp


@pytest.mark.parametrize("n", [1, 2, 3])
def test_shards_split_the_runs_with_each_run_in_exactly_one(n: int) -> None:
    runs = list(range(19))
    owners = [[k for k in range(n) if lp._mine((k, n), i)] for i in runs]
    assert all(len(o) == 1 for o in owners)
    assert all(lp._mine(None, i) for i in runs)


def test_tree_grpo_q_gets_a_quarter_of_the_chains_budget() -> None:
    assert lp.RUNS["tree-grpo-q"] == ("tree-grpo", 0.25)
    assert {lp.RUNS[a][1] for a in ("gigpo", "grpo", "tree-grpo")} == {1.0}
    assert ("tree-grpo-q", "grpo") in lp.COMPARISONS


def test_the_word_policy_reads_the_whole_episode() -> None:
    p = lp.Protocol(env="search", policy="word", d_model=64, layers=3, latest_feature=True)
    assert lp._history(p) is None
    assert lp._history(lp.Protocol(env="search")) == 1  # the byte preset's window
    model = lp._model(p)
    assert (model.d_model, model.n_layers, model.latest_feature) == (64, 3, True)
    assert model.context == "dialogue"


def _anchor(step: float, rows: int = 10) -> dict[str, float]:
    return {
        "rows": rows,
        "step_nonzero": step,
        "episode_nonzero": step / 2,
        "shared": 0.5,
        "anchor_size": 2.0,
    }


def test_anchor_statistics_of_the_start_and_the_final_policy() -> None:
    sets = {"table": [0, 1], "reeval": [2, 3]}
    modes = {"greedy": [1.0, 0.0], "sampled": [0.0, 0.0]}
    start = {d: {s: dict(modes) for s in sets} for d in (0, 1)}
    runs = {}
    for d, r in itertools.product((0, 1), (0, 1)):
        anchor = [_anchor(0.1), _anchor(0.2), _anchor(0.5), _anchor(0.7), _anchor(0.9)]
        runs[f"gigpo-d{d}-r{r}"] = {
            "algo": "gigpo",
            "demo_seed": d,
            "rl_seed": r,
            "train": {"anchor": anchor, "train_s": 1.0, "env_steps": 10},
            **{s: dict(modes) for s in sets},
        }
    summary = lp.summarise({"start": start, "runs": runs})
    cell = summary["algos"]["gigpo"]
    assert cell["step_nonzero_start"] == pytest.approx(0.15)  # batches 1-2 of every run
    assert cell["step_nonzero_final"] == pytest.approx(0.8)  # the last 2
    assert cell["episode_nonzero_final"] == pytest.approx(0.4)
