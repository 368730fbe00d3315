"""Each conformance rule catches an env that breaks it, and only that rule fails.

Also: every failed rule is reported (not only the first), skipped rules say why, and an env
that raises is located in its own code, both through the API and ``agentgym check``.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agentgym.error import ConformanceError
from agentgym.testing import RULES, check_env, run_checks
from tests.check_broken_envs import (
    AliasSplitsEnv,
    ChoiceEnv,
    ConstantKeyEnv,
    LeakyAnswerEnv,
    NoSystemPromptEnv,
    OverlappingHeldOutEnv,
    RaisesInStepEnv,
    RaisesTypeErrorInResetEnv,
    SameSplitsEnv,
    SumEnv,
    TurnKeyEnv,
    TwoBrokenRulesEnv,
)
from tests.fake_envs import CounterEnv

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent / "check_broken_envs.py"


def _statuses(cls) -> dict[str, str]:
    return {r.rule: r.status for r in run_checks(cls(), factory=cls).results}


@pytest.mark.parametrize("cls", [CounterEnv, SumEnv, ChoiceEnv, AliasSplitsEnv])
def test_correct_envs_pass_every_rule(cls):
    report = run_checks(cls(), factory=cls)
    assert report.ok, report.summary()
    assert [r.rule for r in report.results] == [r.name for r in RULES]


@pytest.mark.parametrize(
    ("cls", "rule", "words"),
    [
        (TurnKeyEnv, "state-key-history-free", "turn counter"),
        (ConstantKeyEnv, "state-key-varies", "one key 'state'"),
        (SameSplitsEnv, "splits-disjoint", "train and test task sets that share no id"),
        (OverlappingHeldOutEnv, "splits-disjoint", "test and test_seen task sets"),
        (LeakyAnswerEnv, "answer-hidden", "answer of every sampled task"),
        (NoSystemPromptEnv, "system-prompt", "system_prompt"),
    ],
)
def test_each_broken_env_fails_exactly_its_rule(cls, rule, words):
    report = run_checks(cls(), factory=cls)
    assert [r.rule for r in report.failed] == [rule], report.summary()
    message = report.failed[0].message
    assert message.startswith(f"[{rule}]") and words in message
    with pytest.raises(ConformanceError, match=rf"1 of {len(RULES)} .*\({rule}\)"):
        check_env(cls(), factory=cls)


def test_every_failed_rule_is_reported_not_only_the_first():
    report = run_checks(TwoBrokenRulesEnv(), factory=TwoBrokenRulesEnv)
    assert {r.rule for r in report.failed} == {"splits-disjoint", "state-key-varies"}
    assert len(report.results) == len(RULES)  # the rules after the failures ran too
    with pytest.raises(ConformanceError) as caught:
        check_env(TwoBrokenRulesEnv(), factory=TwoBrokenRulesEnv)
    assert "[splits-disjoint]" in str(caught.value) and "[state-key-varies]" in str(caught.value)


def test_a_rule_that_does_not_apply_is_skipped_with_the_reason():
    statuses = _statuses(CounterEnv)
    assert statuses["answer-hidden"] == "skipped"
    reason = next(r for r in run_checks(CounterEnv()).results if r.rule == "answer-hidden")
    assert "answers_in_text" in reason.message


def _line_of(marker: str) -> int:
    return next(i for i, ln in enumerate(HERE.read_text().splitlines(), 1) if marker in ln)


def test_an_env_that_raises_is_located_in_its_own_code():
    report = run_checks(RaisesInStepEnv(), factory=RaisesInStepEnv)
    fuzz = next(r for r in report.results if r.rule == "fuzz")
    assert fuzz.status == "failed" and "KeyError" in fuzz.message
    assert fuzz.where.startswith(f"{'tests/check_broken_envs.py'}:{_line_of('RAISES-HERE')} ")
    assert "Traceback" in fuzz.traceback and "RAISES-HERE" in fuzz.traceback


def test_an_env_raising_typeerror_in_reset_is_not_blamed_on_its_signature():
    report = run_checks(RaisesTypeErrorInResetEnv(), factory=RaisesTypeErrorInResetEnv)
    gym_rule = next(r for r in report.results if r.rule == "gymnasium")
    assert gym_rule.status == "failed"
    assert "the env raised TypeError" in gym_rule.message
    assert "signature" not in gym_rule.message
    assert f"check_broken_envs.py:{_line_of('RESET-RAISES-HERE')} in _reset" in gym_rule.where


def test_agentgym_check_lists_every_rule_and_locates_a_raise(tmp_path):
    (tmp_path / "broken_ids.py").write_text(
        textwrap.dedent(
            """
            import agentgym
            agentgym.register("checktest/TwoBroken-v0", family="test",
                              entry_point="tests.check_broken_envs:TwoBrokenRulesEnv")
            agentgym.register("checktest/Raises-v0", family="test",
                              entry_point="tests.check_broken_envs:RaisesInStepEnv")
            """
        )
    )
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}

    def check(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "agentgym", "check", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    two = check("broken_ids:checktest/TwoBroken-v0")
    assert two.returncode == 1, two.stdout + two.stderr
    lines = two.stdout.splitlines()
    for rule in RULES:
        assert any(ln.split()[:2][-1:] == [rule.name] for ln in lines), (rule.name, two.stdout)
    assert "FAIL splits-disjoint" in two.stdout and "FAIL state-key-varies" in two.stdout
    assert "PASS determinism" in two.stdout and "SKIP answer-hidden" in two.stdout
    assert "2 of 12 rules failed (splits-disjoint, state-key-varies)" in two.stdout

    raises = check("broken_ids:checktest/Raises-v0")
    assert raises.returncode == 1
    assert f"check_broken_envs.py:{_line_of('RAISES-HERE')} in _step" in raises.stdout
    assert "Traceback" not in raises.stdout
    full = check("broken_ids:checktest/Raises-v0", "--traceback", "--rule", "fuzz")
    assert "Traceback (most recent call last)" in full.stdout and "RAISES-HERE" in full.stdout
    assert "1 rules checked" in full.stdout
