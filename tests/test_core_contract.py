"""AgentEnv: the contract the base class enforces for every env."""

from __future__ import annotations

import gymnasium as gym
import pytest

from agentgym.core import RESET_INFO_KEYS, STEP_INFO_KEYS, Snapshot
from agentgym.error import InvalidConfigError, UnknownTaskError
from agentgym.parsing import render_tool_call
from tests.fake_envs import CounterEnv, NativeCounterEnv

ADD1 = render_tool_call("add", {"n": 1})


def test_reset_info_has_every_contract_key_and_openai_tools():
    env = CounterEnv()
    obs, info = env.reset(seed=3)
    assert set(RESET_INFO_KEYS) <= set(info)
    assert info["tools"][0]["function"]["name"] == "add"
    assert obs["images"] == () and isinstance(obs["text"], str)


def test_same_seed_gives_same_task_and_observation():
    a, b = CounterEnv(), CounterEnv()
    assert a.reset(seed=11)[0] == b.reset(seed=11)[0]
    assert a.task_id == b.task_id


def test_task_id_option_picks_the_task_and_unknown_ids_are_refused_with_a_hint():
    env = CounterEnv()
    _, info = env.reset(seed=0, options={"task_id": "counter-5"})
    assert info["task_id"] == "counter-5"
    with pytest.raises(UnknownTaskError, match="belongs to split 'test'"):
        env.reset(options={"task_id": "counter-55"})
    with pytest.raises(UnknownTaskError, match="Example ids"):
        env.reset(options={"task_id": "nope"})


def test_splits_are_disjoint():
    env = CounterEnv()
    assert not set(env.task_ids("train")) & set(env.task_ids("test"))


def test_reward_is_the_weighted_sum_and_weights_can_be_overridden():
    env = CounterEnv(reward_weights={"progress": 2.0})
    env.reset(seed=0, options={"task_id": "counter-3"})  # target 4
    env.value = 0
    _, reward, _, _, info = env.step(ADD1)
    assert set(STEP_INFO_KEYS) <= set(info)
    assert info["reward_components"] == {"format": 0.0, "outcome": 0.0, "progress": 1.0}
    assert reward == pytest.approx(2.0)


def test_unknown_reward_component_is_a_clear_error():
    with pytest.raises(InvalidConfigError, match=r"no reward component 'speed'.*progress"):
        CounterEnv(reward_weights={"speed": 1.0})


def test_invalid_action_gets_format_penalty_and_explains_itself():
    env = CounterEnv()
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(
        '<tool_call>{"name": "add", "arguments": {"n": 9}}</tool_call>'
    )
    assert info["action_valid"] is False
    assert info["reward_components"]["format"] == -1.0
    assert reward == pytest.approx(-0.5)
    assert "greater than the maximum of 3" in obs["text"] and "maximum of 3" in info["error"]
    assert not terminated and not truncated


def test_turn_budget_truncates_with_success_false():
    env = CounterEnv(max_turns=2)
    env.reset(seed=0)
    env.step("x")
    obs, _, terminated, truncated, info = env.step("x")
    assert (terminated, truncated, info["success"]) == (False, True, False)
    assert "turn budget (2)" in obs["text"]


def test_step_after_the_end_does_not_raise_and_says_so():
    env = CounterEnv(max_turns=1)
    env.reset(seed=0)
    env.step("x")
    obs, reward, terminated, _, info = env.step(ADD1)
    assert terminated and reward == 0.0 and info["action_valid"] is False
    assert "reset()" in obs["text"]


def test_step_before_reset_is_an_api_error():
    with pytest.raises(gym.error.ResetNeeded):
        CounterEnv().step(ADD1)


def test_long_observation_text_is_truncated_with_a_marker():
    env = CounterEnv(max_text_length=100)
    env.reset(seed=0)
    obs = env._observation("x" * 500)
    assert len(obs["text"]) <= 100 and "truncated: 400 more characters" in obs["text"]


@pytest.mark.parametrize("cls", [CounterEnv, NativeCounterEnv])
def test_snapshot_restore_returns_to_the_same_future(cls):
    env = cls()
    env.reset(seed=5)
    env.step(ADD1)
    snap = env.snapshot()
    assert isinstance(snap, Snapshot)
    first = [env.step(render_tool_call("add", {"n": n}))[0]["text"] for n in (1, -1, 2)]
    env.restore(snap)
    assert env.turn == 1
    second = [env.step(render_tool_call("add", {"n": n}))[0]["text"] for n in (1, -1, 2)]
    assert first == second


def test_restore_refuses_a_foreign_snapshot():
    env = CounterEnv()
    with pytest.raises(InvalidConfigError, match="Snapshot taken from a CounterEnv"):
        env.restore("not a snapshot")  # type: ignore[arg-type]


def test_bad_split_and_render_mode_are_clear_errors():
    with pytest.raises(InvalidConfigError, match="split must be one of"):
        CounterEnv(split="validation")
    with pytest.raises(InvalidConfigError, match="render_mode 'human'"):
        CounterEnv(render_mode="human")


def test_ansi_render_shows_the_last_observation():
    env = CounterEnv(render_mode="ansi")
    obs, _ = env.reset(seed=0)
    assert env.render() == obs["text"]
