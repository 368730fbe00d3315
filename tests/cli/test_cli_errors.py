"""The CLI answers user mistakes with one line and exit code 2, never a traceback (issue 18).

Points 6 (multi-agent ids), 7 (``run --env-kwargs``), 9 (negative seed, unknown env keyword,
``--device cuda`` without a GPU, a broken ``AGENTGYM_CHROMIUM``, a closed pipe) and 10
(``agentgym bench`` outside a checkout).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest

import agentgym
from agentgym.cli import cmd_bench, main
from agentgym.error import AgentGymError

MULTI = [r.id for r in agentgym.list_envs(multi_agent=True)]


def _one_line_error(err: str, *needles: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err and "error:" in lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def _cli(*args: str, env: dict[str, str] | None = None, cwd: str | None = None):
    return subprocess.run(
        [sys.executable, "-m", "agentgym", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        check=False,
    )


# --- point 9 ------------------------------------------------------------------------------


def test_run_with_a_negative_seed_is_a_one_line_usage_error(capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "agentgym/Sokoban-Tiny-v0", "--seed", "-5", "--quiet"])
    assert exit_info.value.code == 2
    _one_line_error(capsys.readouterr().err, "--seed", ">= 0", "-5")


def test_train_with_an_unknown_env_keyword_names_it_and_the_accepted_ones(capsys, tmp_path):
    code = main(
        ["train", "--env", "agentgym/Sokoban-Tiny-v0", "--env-kwargs", '{"bogus": 1}',
         "--iterations", "1", "--no-progress", "--out", str(tmp_path / "run")]
    )  # fmt: skip
    assert code == 2
    line = _one_line_error(capsys.readouterr().err, "'bogus'", "max_turns")
    assert "Sokoban-Tiny-v0" in line
    assert not (tmp_path / "run" / "checkpoint.pt").exists()


@pytest.mark.parametrize("command", ["eval", "run"])
def test_a_split_the_env_lacks_is_a_one_line_error_naming_its_splits(command, capsys):
    code = main([command, "agentgym/Sokoban-Tiny-v0", "--split", "valid", "--episodes", "1",
                 "--policy", "random"])  # fmt: skip
    assert code == 2
    _one_line_error(capsys.readouterr().err, "no split 'valid'", "train, test.")


def test_eval_and_run_take_the_extra_splits_an_env_declares(capsys, tmp_path):
    """Household-v0 adds valid, test_seen and test_unseen to train/test (issue 24)."""
    out = tmp_path / "eval.jsonl"
    code = main(["eval", "agentgym/Household-v0", "--split", "valid", "--episodes", "2",
                 "--policy", "random", "--mode", "greedy", "--out", str(out)])  # fmt: skip
    assert code == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    household = gym.make("agentgym/Household-v0").unwrapped
    assert len(rows) == 2 and {row["split"] for row in rows} == {"valid"}
    assert all(row["task_id"] in household.task_ids("valid") for row in rows), rows
    capsys.readouterr()
    code = main(["run", "agentgym/Household-v0", "--split", "test_seen", "--episodes", "1",
                 "--quiet", "--json", "--policy", "random"])  # fmt: skip
    assert code == 0
    row = json.loads(capsys.readouterr().out.splitlines()[0])
    assert row["task_id"] in household.task_ids("test_seen")
    assert row["task_id"] not in household.task_ids("test_unseen")
    household.close()


def test_train_on_cuda_with_cpu_only_torch_says_so(capsys, tmp_path) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    code = main(
        ["train", "--env", "agentgym/Sokoban-Tiny-v0", "--device", "cuda",
         "--iterations", "1", "--no-progress", "--out", str(tmp_path / "run")]
    )  # fmt: skip
    assert code == 2
    _one_line_error(capsys.readouterr().err, "--device cuda", "--device cpu")


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["missing", "broken"])
def test_a_set_but_unusable_agentgym_chromium_is_named(kind: str, tmp_path: Path) -> None:
    """A fresh process, so no browser started by another test is reused."""
    path = tmp_path / "chrome"
    if kind == "broken":
        path.write_text("#!/bin/sh\necho 'cannot open display' >&2\nexit 3\n")
        path.chmod(0o755)
    result = _cli(
        "run", "agentgym/WebForms-v0", "--episodes", "1", "--quiet",
        env={"AGENTGYM_CHROMIUM": str(path)},
    )  # fmt: skip
    assert result.returncode == 2, result.stderr[-2000:]
    line = _one_line_error(result.stderr, "AGENTGYM_CHROMIUM", str(path))
    assert ("names no file" in line) if kind == "missing" else ("exited 3" in line)


def test_the_chromium_variable_is_checked_not_skipped(monkeypatch, tmp_path) -> None:
    from agentgym.simulators.browser.runtime import find_chromium

    monkeypatch.setenv("AGENTGYM_CHROMIUM", str(tmp_path / "nothing-here"))
    with pytest.raises(AgentGymError, match="AGENTGYM_CHROMIUM"):
        find_chromium()


def test_list_into_a_closed_pipe_exits_cleanly() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentgym", "list"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before a line is written (`| head -0`)
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err


# --- point 7 ------------------------------------------------------------------------------


def test_run_takes_env_kwargs(capsys) -> None:
    code = main(
        ["run", "agentgym/Sokoban-Tiny-v0", "--episodes", "3", "--quiet", "--json",
         "--policy", "random", "--env-kwargs", '{"max_turns": 2}']
    )  # fmt: skip
    assert code == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line[:1] == "{"]
    assert len(rows) == 3 and all(row["turns"] <= 2 for row in rows)


# --- point 6 ------------------------------------------------------------------------------


@pytest.mark.parametrize("env_id", MULTI)
def test_gym_make_of_a_multi_agent_id_points_to_make_multi(env_id: str) -> None:
    with pytest.raises(AgentGymError, match=r"multi-agent .* agentgym\.make_multi"):
        gym.make(env_id)
    with pytest.raises(AgentGymError, match=r"agentgym\.make_multi"):
        gym.make(f"agentgym:{env_id}")
    assert agentgym.make_multi(env_id) is not None  # the pointer is right


@pytest.mark.parametrize("command", ["run", "train"])
def test_cli_with_a_multi_agent_id_points_to_make_multi(command: str, capsys, tmp_path) -> None:
    args = ["run", "Negotiation-v0", "--quiet"] if command == "run" else [
        "train", "--env", "Negotiation-v0", "--no-progress", "--out", str(tmp_path / "r")]  # fmt: skip
    assert main(args) == 2
    _one_line_error(capsys.readouterr().err, "multi-agent", "make_multi")


# --- point 10 -----------------------------------------------------------------------------


def test_bench_outside_a_checkout_says_it_needs_one(monkeypatch, capsys) -> None:
    monkeypatch.setattr(cmd_bench, "find_checkout", lambda cwd=None: None)
    assert main(["bench", "--quick"]) == 2
    _one_line_error(capsys.readouterr().err, "source checkout", "git clone", "pip install -e")


def test_bench_uses_agentgyms_harness_not_a_benchmarks_package_in_the_cwd(tmp_path) -> None:
    """A user's own ``benchmarks`` package in the working directory is not run."""
    decoy = tmp_path / "benchmarks"
    decoy.mkdir()
    (decoy / "__init__.py").write_text("")
    marker = tmp_path / "decoy-ran"
    (decoy / "__main__.py").write_text(
        f"def main(argv):\n    open({str(marker)!r}, 'w').close()\n    return 0\n"
    )
    result = _cli("bench", "no-such-benchmark", cwd=str(tmp_path))
    assert not marker.exists()
    if cmd_bench.find_checkout(tmp_path) is None:  # a non-editable install: no harness here
        _one_line_error(result.stderr, "source checkout")
    else:  # the editable checkout's harness ran and refused the unknown name
        assert result.returncode == 2 and "unknown benchmarks" in result.stderr
