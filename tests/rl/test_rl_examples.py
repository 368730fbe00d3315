"""The training examples run as documented (tiny budgets; the real runs are in BENCHMARKS.md)."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _run(*args: str) -> str:
    proc = subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def _rows(path: Path) -> list[dict]:
    with open(path) as f:
        return list(csv.DictReader(f))


def test_train_sokoban_example_writes_metrics_and_reports_success(tmp_path):
    out = _run("examples/train_sokoban.py", "--iterations", "2", "--out", str(tmp_path))
    assert "success" in out and "env steps" in out
    assert len(_rows(tmp_path / "metrics.csv")) == 2
    assert (tmp_path / "curve.png").stat().st_size > 0


def test_train_compare_runs_every_algorithm_to_the_same_budget(tmp_path):
    out = _run(
        "examples/train_compare.py",
        "--env", "agentgym/Sokoban-Tiny-v0",
        "--algos", "gigpo", "grpo", "tree-grpo",
        "--seeds", "0",
        "--budget", "300",
        "--task-seeds", "0", "1",
        "--workers", "2",
        "--out", str(tmp_path),
    )  # fmt: skip
    summary = (tmp_path / "summary.md").read_text()
    for algo in ("gigpo", "grpo", "tree-grpo"):
        assert f"| {algo} | 1 |" in summary
        steps = int(_rows(tmp_path / f"{algo}-s0" / "metrics.csv")[-1]["env_steps"])
        assert steps >= 300  # each stops at the first iteration that reaches the budget
    assert (tmp_path / "curve.png").stat().st_size > 0
    assert "plot:" in out


def test_train_compare_dialogue_recipe_from_the_docs_runs(tmp_path):
    _run(
        "examples/train_compare.py",
        "--env", "agentgym/UserTwentyQuestions-v0",
        "--algos", "gigpo",
        "--env-kwargs", '{"max_turns": 10}',
        "--context", "dialogue", "--history-turns", "-1", "--prompt-bytes", "256",
        "--seeds", "0", "--budget", "100", "--eval-every", "2", "--eval-tasks", "2",
        "--workers", "1",
        "--out", str(tmp_path),
    )  # fmt: skip
    rows = _rows(tmp_path / "gigpo-s0" / "metrics.csv")
    assert rows and all(0.0 <= float(r["success"]) <= 1.0 for r in rows)
    assert float(rows[-1]["loss"]) == float(rows[-1]["loss"])  # finite, not NaN
    evals = _rows(tmp_path / "gigpo-s0" / "eval.csv")
    assert int(evals[0]["env_steps"]) == 0 and len(evals) >= 2
    assert "Held-out TEST-split success" in (tmp_path / "summary.md").read_text()


def test_learning_protocol_reuses_sft_starts_at_another_budget(tmp_path):
    """examples/learning_protocol.py end to end at a toy size, then again from the same SFT
    start at another RL budget (--starts-from): the start is copied, not retrained, and a
    source made with other SFT settings is refused."""
    size = ["--env", "search", "--demo-seeds", "0", "--rl-seeds", "0", "1",
            "--demo-episodes", "4", "--sft-epochs", "1", "--d-model", "8",
            "--valid-tasks", "3", "--test-tasks", "3", "--reeval-tasks", "3", "--lr-grid", "1e-3"]  # fmt: skip
    first, second = tmp_path / "first", tmp_path / "second"
    out = _run("examples/learning_protocol.py", *size, "--budget", "12", "--out", str(first))
    assert "| greedy success |" in out and "Does RL raise held-out success" in out
    start = (first / "sft-d0" / "checkpoint.pt").read_bytes()
    _run("examples/learning_protocol.py", *size, "--budget", "24", "--out", str(second),
         "--starts-from", str(first))  # fmt: skip
    assert (second / "sft-d0" / "checkpoint.pt").read_bytes() == start
    import json

    results = json.loads((second / "results.json").read_text())
    assert results["protocol"]["budget"] == 24
    assert {r["train"]["env_steps"] >= 24 for r in results["runs"].values()} == {True}
    assert results["sets"] == json.loads((first / "task_sets.json").read_text())
    proc = subprocess.run(
        [sys.executable, "examples/learning_protocol.py", *size, "--d-model", "16",
         "--budget", "24", "--out", str(tmp_path / "third"), "--starts-from", str(first)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode != 0 and "made with other d_model" in proc.stderr
