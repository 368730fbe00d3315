"""``agentgym/RepoFix-v0`` through its public API: episodes, rewards, search, own instances."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from agentgym.error import InvalidConfigError
from agentgym.parsing import render_tool_call
from agentgym.testing import sample_valid_actions

pytestmark = pytest.mark.sandbox

DATA = Path(__file__).resolve().parent / "data" / "swebench"
SUBMIT = render_tool_call("submit", {})


@pytest.fixture
def env(pool):
    environment = gym.make("agentgym/RepoFix-v0", pool=pool)
    yield environment
    environment.close()


def _bash(command: str) -> str:
    return render_tool_call("bash", {"command": command})


@pytest.mark.parametrize("split", ["train", "test"])
def test_the_oracle_solves_a_task_of_each_split(pool, split):
    env = gym.make("agentgym/RepoFix-v0", pool=pool, split=split)
    try:
        _, info = env.reset(seed=11)
        assert info["task_id"].split("-")[0] in env.unwrapped.task(info["task_id"]).repo
        _, reward, terminated, _, info = env.step(env.unwrapped.oracle_action())
        assert terminated and info["success"] and info["resolved"]
        assert info["reward_components"] == {"format": 0.0, "tests": 1.0, "outcome": 1.0}
        assert reward == pytest.approx(1.1)
        assert info["diff"].startswith("--- a/") and "\n+" in info["diff"]
    finally:
        env.close()


def test_a_random_policy_solves_nothing(env):
    rng = np.random.default_rng(0)
    for seed in range(3):
        _, info = env.reset(seed=seed)
        for _ in range(4):
            action = sample_valid_actions(env, info, rng, 1)[0]
            _, _, terminated, truncated, step = env.step(action)
            if terminated or truncated:
                break
        else:
            _, _, terminated, _, step = env.step(SUBMIT)
        assert not step["success"] and step["reward_components"]["outcome"] == 0.0


def test_submitting_the_untouched_repository_keeps_the_other_tests(env):
    env.reset(seed=5)
    task = env.unwrapped.task(env.unwrapped.task_id)
    obs, _, _, _, info = env.step(SUBMIT)
    assert info["fail_to_pass_passed"] == 0 and not info["resolved"]
    assert info["pass_to_pass_passed"] == len(task.pass_to_pass)
    expected = len(task.pass_to_pass) / len(task.graded_tests)
    assert info["reward_components"]["tests"] == pytest.approx(expected)
    assert info["diff"] == ""
    assert f"0 of {len(task.fail_to_pass)} tests for the issue pass" in obs["text"]


def test_the_turn_budget_grades_and_truncates(pool):
    env = gym.make("agentgym/RepoFix-v0", pool=pool, max_turns=2)
    try:
        env.reset(seed=2)
        env.step(_bash("echo first"))
        _, _, terminated, truncated, info = env.step(_bash("echo broken > README.md"))
        assert truncated and not terminated and info["success"] is False
        assert info["grading_status"] == "ok" and "+broken" in info["diff"]
    finally:
        env.close()


def test_the_issue_hides_the_code_location_and_the_tests_are_not_visible(env):
    obs, info = env.reset(seed=7)
    task = env.unwrapped.task(info["task_id"])
    edits = {p.split("/", 1)[-1] for p in task.patch.split("\n") if p.startswith("--- a/")}
    for edited in edits:
        assert edited not in obs["text"]
    listing = env.step(_bash("grep -rho 'def test_[a-z_0-9]*' tests | sort"))[0]["text"]
    visible = set(listing.split())
    for test in task.fail_to_pass:
        assert test.split("::")[1].split("[")[0] not in visible


def test_an_invalid_turn_costs_format_and_changes_nothing(env):
    _, info = env.reset(seed=1)
    _, reward, _, _, step = env.step("I think the bug is in the parser.")
    assert step["action_valid"] is False and reward == pytest.approx(-0.1)
    assert step["state_key"] == info["state_key"]


def test_several_calls_in_one_turn_run_in_order(env):
    env.reset(seed=1)
    turn = (
        _bash("mkdir -p notes && cd notes")
        + render_tool_call("create", {"path": "notes/a.txt", "file_text": "A"})
        + _bash("pwd; cat a.txt")
    )
    obs, _, _, _, _ = env.step(turn)
    assert obs["text"].endswith("[bash]\n~/notes\nA")


def test_snapshot_branches_are_independent_and_keys_history_free(env):
    _, info = env.reset(seed=3)
    start = info["state_key"]
    snap = env.unwrapped.snapshot()
    _, _, _, _, step = env.step(_bash("echo changed > README.md"))
    assert step["state_key"] != start
    env.step(_bash("git checkout -q README.md"))
    assert env.unwrapped.state_key() == start  # same files again: same key, whatever happened
    env.step(_bash("echo other > README.md"))
    env.unwrapped.restore(snap)
    assert env.unwrapped.state_key() == start
    obs = env.step(_bash("git status --short"))[0]
    assert obs["text"] == "[bash]\n"


def test_swebench_instances_from_local_files(pool):
    env = gym.make(
        "agentgym/RepoFix-v0",
        pool=pool,
        instances=DATA / "instances.jsonl",
        repos=DATA / "repos",
        split="test",
    )
    try:
        assert tuple(env.unwrapped.task_ids("test")) == ("acme__wordstats-1", "acme__wordstats-2")
        assert env.unwrapped.task_ids("train") == ()
        obs, _ = env.reset(options={"task_id": "acme__wordstats-1"})
        assert "sentences() loses the last sentence" in obs["text"]
        listed = env.step(_bash("ls; grep -c def tests/test_text.py"))[0]["text"]
        assert listed == "[bash]\nREADME.md\npyproject.toml\ntests\nwordstats\n3\n"
        _, _, terminated, _, step = env.step(env.unwrapped.oracle_action())
        assert terminated and step["success"]
    finally:
        env.close()


def test_an_instance_needing_a_missing_package_is_refused_by_name():
    with pytest.raises(InvalidConfigError, match="lacks lxml"):
        gym.make(
            "agentgym/RepoFix-v0", instances=DATA / "instances_missing.jsonl", repos=DATA / "repos"
        )


@pytest.mark.parametrize(
    ("instances", "repos", "message"),
    [
        (DATA / "nope.jsonl", DATA / "repos", "is not a file"),
        (DATA / "instances.jsonl", DATA / "nowhere", "is not a folder"),
        (DATA / "instances.jsonl", None, "need both"),
        (DATA / "make_instances.py", DATA / "repos", "neither JSONL nor a JSON list"),
        (DATA / "instances.jsonl", DATA, "no snapshot of acme/wordstats"),
    ],
)
def test_bad_instance_files_get_one_clear_error(instances, repos, message):
    with pytest.raises(InvalidConfigError, match=message):
        gym.make("agentgym/RepoFix-v0", instances=instances, repos=repos)


def test_an_invalid_last_turn_is_graded_too(pool):
    env = gym.make("agentgym/RepoFix-v0", pool=pool, max_turns=1)
    try:
        env.reset(seed=2)
        _, _, terminated, truncated, info = env.step("no tool call at all")
        assert truncated and not terminated and info["action_valid"] is False
        assert info["grading_status"] == "ok" and info["reward_components"]["format"] == -1.0
        assert info["reward_components"]["tests"] > 0.5  # the untouched tests still pass
    finally:
        env.close()


def test_the_final_diff_is_in_the_recorded_trajectory(pool, tmp_path):
    from agentgym.wrappers import Record

    import agentgym.trajectory as trj

    path = tmp_path / "repo.agtr"
    env = Record(gym.make("agentgym/RepoFix-v0"), path)  # (the default pool is ``pool``)
    try:
        env.reset(seed=9)
        env.step(_bash("echo '# touched' >> README.md"))
        _, _, _, _, info = env.step(SUBMIT)
    finally:
        env.close()
    assert "+# touched" in info["diff"]
    with trj.open(path) as reader:
        (episode,) = list(reader.episodes())
    assert episode.steps[-1]["info"]["diff"] == info["diff"]
