"""The base class's rules at their boundaries: the turn at the budget, the text at its length
limit, success only on termination, the task-id hint, and which info keys appear when.

tests/test_core_contract.py shows each rule works; these pin the edges so that an off-by-one
or a flipped condition in ``AgentEnv`` fails a test.
"""

from __future__ import annotations

import pytest

from agentgym.core import StepOutcome
from agentgym.error import InvalidConfigError, UnknownTaskError
from agentgym.parsing import ParsedAction, render_tool_call
from tests.check_broken_envs import SumEnv
from tests.fake_envs import CounterEnv, NativeCounterEnv

ADD1 = render_tool_call("add", {"n": 1})


def test_the_budget_ends_the_episode_on_the_last_turn_not_before():
    env = CounterEnv(max_turns=3)
    env.reset(seed=0)
    for turn in (1, 2):
        obs, _, terminated, truncated, info = env.step("x")
        assert (terminated, truncated) == (False, False), turn
        assert "success" not in info and "turn budget" not in obs["text"]
        assert env.turn == turn
    obs, _, terminated, truncated, info = env.step("x")
    assert (terminated, truncated, info["success"], env.turn) == (False, True, False, 3)
    assert obs["text"].endswith("The turn budget (3) is used up; the episode ends.")


def test_no_budget_means_no_truncation():
    env = CounterEnv(max_turns=0)
    assert env.max_turns == 0
    env = SumEnv()
    assert env.max_turns == 3  # the class default
    unlimited = CounterEnv()
    unlimited.max_turns = None
    unlimited.reset(seed=0)
    for _ in range(12):
        assert unlimited.step("x")[3] is False


def test_success_needs_termination_even_when_the_env_claims_it():
    class ClaimsSuccessOnTruncation(CounterEnv):
        def _step(self, action: ParsedAction) -> StepOutcome:
            return StepOutcome(text="t", truncated=True, success=True)

    env = ClaimsSuccessOnTruncation()
    env.reset(seed=0)
    _, _, terminated, truncated, info = env.step(ADD1)
    assert (terminated, truncated, info["success"]) == (False, True, False)
    # and after the end the recorded success is the same False
    assert env.step(ADD1)[4]["success"] is False


def test_a_solved_episode_reports_success_after_the_end_too():
    env = SumEnv()
    env.reset(seed=4)
    _, reward, terminated, _, info = env.step(env.oracle_action())
    assert terminated and info["success"] is True
    assert reward == pytest.approx(1.0)  # outcome 1 x 1.0, format 0
    _, reward, terminated, truncated, info = env.step(env.oracle_action())
    assert (reward, terminated, truncated, info["success"]) == (0.0, True, False, True)
    assert info["error"] == "step() after the episode ended"
    assert info["reward_components"] == {"format": 0.0, "outcome": 0.0}


def test_format_component_is_minus_one_only_for_invalid_turns():
    env = CounterEnv(reward_weights={"format": 2.0, "progress": 0.0})
    env.reset(seed=0)
    _, reward, _, _, info = env.step("<tool_call>not json</tool_call>")
    assert info["reward_components"]["format"] == -1.0 and reward == pytest.approx(-2.0)
    assert info["action_valid"] is False and "JSON" in info["error"]
    _, _, _, _, info = env.step(ADD1)
    assert info["reward_components"]["format"] == 0.0
    assert info["action_valid"] is True and info["error"] is None


def test_text_at_the_limit_is_kept_and_one_past_it_is_cut_to_the_limit():
    env = CounterEnv(max_text_length=100)
    env.reset(seed=0)
    assert env._observation("x" * 100)["text"] == "x" * 100
    cut = env._observation("x" * 101)["text"]
    assert len(cut) == 100
    assert cut.endswith("[... truncated: 1 more characters]") and cut.startswith("x")
    # a limit smaller than the marker still gives exactly the limit
    tiny = CounterEnv(max_text_length=5)
    tiny.reset(seed=0)
    assert tiny._observation("y" * 50)["text"] == "\n[..."  # the marker's start, no text


def test_an_unknown_task_gets_a_split_hint_only_when_another_split_has_it():
    env = CounterEnv()
    with pytest.raises(UnknownTaskError) as exc:
        env.reset(options={"task_id": "counter-999999"})
    assert "belongs to split" not in str(exc.value)
    with pytest.raises(UnknownTaskError, match="belongs to split 'test'"):
        env.reset(options={"task_id": env.task_ids("test")[0]})
    train_only = CounterEnv(split="test")
    with pytest.raises(UnknownTaskError, match="belongs to split 'train'"):
        train_only.reset(options={"task_id": env.task_ids("train")[0]})


def test_admissible_actions_appear_only_when_the_env_lists_them():
    env = CounterEnv()
    _, info = env.reset(seed=0)
    assert info["admissible_actions"] == env.admissible_actions()
    _, _, _, _, info = env.step(ADD1)
    assert info["admissible_actions"] == env.admissible_actions()
    plain = SumEnv()
    _, info = plain.reset(seed=0)
    assert "admissible_actions" not in info
    _, _, _, _, info = plain.step("no answer")
    assert "admissible_actions" not in info


def test_the_final_step_lists_no_admissible_actions():
    env = CounterEnv(max_turns=1)
    env.reset(seed=0)
    info = env.step("x")[4]
    assert "admissible_actions" not in info and info["success"] is False


def test_reset_info_state_key_and_weights_match_the_env():
    env = CounterEnv(reward_weights={"outcome": 3.0})
    _, info = env.reset(seed=2, options=None)
    assert info["state_key"] == env.state_key()
    assert info["reward_weights"] == {"format": 0.5, "outcome": 3.0, "progress": 0.1}
    assert info["system_prompt"] == "Call add."


def test_answer_tool_adds_its_note_to_the_system_prompt():
    _, info = SumEnv(answer_tool=True).reset(seed=0)
    assert info["system_prompt"].startswith("Answer in <answer>.\n")
    assert "answer" in [t["function"]["name"] for t in info["tools"]]
    with pytest.raises(InvalidConfigError, match="answer_tool=True"):
        CounterEnv(answer_tool=True)


@pytest.mark.parametrize("cls", [CounterEnv, NativeCounterEnv])
def test_restore_brings_back_turn_done_and_success(cls):
    env = cls(max_turns=2)
    env.reset(seed=1)
    env.step("x")
    snap = env.snapshot()
    assert (snap.turn, snap.done, snap.actions) == (1, False, ("x",))
    env.step("x")
    assert env.step(ADD1)[4]["error"] == "step() after the episode ended"
    env.restore(snap)
    assert env.turn == 1
    _, _, _, truncated, _ = env.step("x")
    assert truncated is True and env.turn == 2


def test_snapshot_before_reset_and_foreign_restore_are_clear_errors():
    import gymnasium as gym

    with pytest.raises(gym.error.ResetNeeded):
        CounterEnv().snapshot()
    env = CounterEnv()
    env.reset(seed=0)
    with pytest.raises(InvalidConfigError, match="Snapshot taken from a CounterEnv"):
        env.restore(None)  # type: ignore[arg-type]
    other = SumEnv()
    other.reset(seed=0)
    with pytest.raises(InvalidConfigError):
        env.restore(other.snapshot())


def test_the_snapshot_keeps_the_actions_in_order():
    env = CounterEnv()
    env.reset(seed=0)
    env.step(ADD1)
    env.step("x")
    assert env.snapshot().actions == (ADD1, "x")


def test_the_parsers_complaint_reaches_the_model_once():
    env = SumEnv()
    env.reset(seed=0)
    # SumEnv's own text leaves the parse error out: the base class appends it
    obs, _, _, _, info = env.step("<tool_call>")
    assert obs["text"] == (
        "Reply with <answer>N</answer>.\nInvalid action: "
        "a <tool_call> tag is not closed: end each call with </tool_call>."
    )
    assert info["error"] == "a <tool_call> tag is not closed: end each call with </tool_call>."
    # CounterEnv's text already quotes it: not repeated
    counter = CounterEnv()
    counter.reset(seed=0)
    text = counter.step("<tool_call>")[0]["text"]
    assert text.count("is not closed") == 1 and "Invalid action:" not in text
