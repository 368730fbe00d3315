"""`check` and `train` say when an env lists no admissible actions (issue 37).

`agentgym train`'s byte policy chooses among ``info["admissible_actions"]``; an env without
them passed `check` and then trained for minutes at 0% with every turn invalid and no word.
"""

from __future__ import annotations

import gymnasium as gym
import pytest

from agentgym.cli import main as cli_main
from agentgym.cli.cmd_check import admissible_actions_warning, lists_admissible_actions

WITHOUT = "agentgym/UserFunction-v0"  # a cheap built-in env that lists none
WITH = "agentgym/Sokoban-Tiny-v0"


def test_check_warns_without_failing_when_an_env_lists_none(capsys):
    assert cli_main(["check", WITHOUT]) == 0
    out = capsys.readouterr().out
    (line,) = [ln for ln in out.splitlines() if ln.startswith("WARN")]
    assert line.startswith(f"WARN {WITHOUT}: no admissible actions")
    assert "agentgym train" in line and "docs/own-env.md#admissible-actions" in line
    assert f"PASS {WITHOUT}" in out


def test_check_says_nothing_for_an_env_that_lists_them(capsys):
    assert cli_main(["check", WITH, "--rule", "close"]) == 0
    assert "WARN" not in capsys.readouterr().out


def test_the_probe_reads_reset_info():
    for env_id, listed in ((WITH, True), (WITHOUT, False)):
        env = gym.make(env_id)
        try:
            assert lists_admissible_actions(env) is listed
        finally:
            env.close()
    assert admissible_actions_warning(WITH) == ""
    note = admissible_actions_warning(WITHOUT, {"max_turns": 2})
    assert note.startswith(f"warning: {WITHOUT} lists no admissible actions") and "\n" not in note


def test_train_says_so_in_one_line_before_it_trains(capsys, tmp_path):
    code = cli_main(
        ["train", "--env", WITHOUT, "--iterations", "1", "--tasks", "1", "--group-size", "2",
         "--num-envs", "2", "--max-turns", "1", "--backend", "sync", "--no-progress",
         "--d-model", "16", "--layers", "1", "--out", str(tmp_path / "run")]
    )  # fmt: skip
    assert code == 0
    err = capsys.readouterr().err.splitlines()
    warnings = [ln for ln in err if "admissible actions" in ln]
    assert len(warnings) == 1 and err[0] == warnings[0], err
    assert "--policy hf" in warnings[0]


class _Built(Exception):
    """Raised by the stand-in trainer: the command got as far as building it."""


def _stand_in_trainer(config):
    raise _Built(config.policy)


@pytest.mark.parametrize(("policy", "probed"), [("hf", False), ("byte", True), ("word", True)])
def test_only_the_byte_policy_is_probed(monkeypatch, capsys, policy, probed):
    # --policy hf generates free text: admissible actions do not matter, so no probe runs
    calls: list[str] = []
    monkeypatch.setattr(
        "agentgym.cli.cmd_check.admissible_actions_warning",
        lambda env_id, kw=None: calls.append(env_id) or "warning: x",
    )
    monkeypatch.setattr("agentgym.algos.trainer.Trainer", _stand_in_trainer)
    with pytest.raises(_Built):
        cli_main(["train", "--env", WITHOUT, "--policy", policy, "--model", "m"])
    assert calls == ([WITHOUT] if probed else [])
    assert ("warning: x" in capsys.readouterr().err) is probed
