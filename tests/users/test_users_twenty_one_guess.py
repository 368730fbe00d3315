"""Twenty questions allows one guess, and only ``answer`` is a guess (issue 38).

The card (envs/users/twenty_questions.py): ``answer(answer)`` is "one guess; ends the
game", ``outcome`` is 1 for the right guess, and ``no_guess`` takes 1 away only when the game
ends without a guess. So a wrong guess ends the episode at once, a second guess cannot be
made (the episode is over: it is neither run nor credited), a guess that names two things
is wrong even when one of them is the secret, and naming the secret in a question is a
question, not a guess.
"""

from __future__ import annotations

import gymnasium as gym
import pytest
from agentgym.simulators.users.twenty import NAMES, TwentyQuestionsDialogue

import agentgym  # noqa: F401
from agentgym.parsing import render_tool_call

ENV = "agentgym/UserTwentyQuestions-v0"


def _answer(text: str) -> str:
    return render_tool_call("answer", {"answer": text})


def _start(seed: int) -> tuple[gym.Env, str, str]:
    env = gym.make(ENV)
    env.reset(seed=seed)
    secret = env.unwrapped.dialogue.secret
    wrong = next(name for name in NAMES if name != secret)
    return env, secret, wrong


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_wrong_guess_ends_the_game_and_a_second_guess_is_not_credited(seed: int):
    env, secret, wrong = _start(seed)
    obs, reward, terminated, truncated, info = env.step(_answer(wrong))
    assert obs["text"] == "User: No, that's not it. Game over - you lose."
    assert (terminated, truncated, info["success"]) == (True, False, False)
    components = info["reward_components"]
    assert components["outcome"] == 0.0
    assert components["no_guess"] == 0.0  # a guess was made, a wrong one
    assert reward == 0.0

    # the right name now is a second guess: the game is over, nothing runs or counts
    obs, reward, terminated, truncated, info = env.step(_answer(secret))
    assert obs["text"].startswith("The episode has ended.")
    assert reward == 0.0 and terminated and not truncated
    assert info["success"] is False and info["action_valid"] is False
    assert all(value == 0.0 for value in info["reward_components"].values())
    assert env.unwrapped.dialogue.guess == wrong  # the first guess stands
    env.close()


def test_the_right_guess_wins_on_its_own_turn():
    env, secret, _wrong = _start(3)
    _, reward, terminated, truncated, info = env.step(_answer(secret))
    assert (terminated, truncated, info["success"]) == (True, False, True)
    assert info["reward_components"]["outcome"] == 1.0
    assert reward == pytest.approx(1.0)  # no information asked for, nothing else earned
    env.close()


def test_a_guess_naming_two_things_is_one_wrong_guess_even_with_the_secret():
    env, secret, wrong = _start(4)
    obs, _, terminated, _, info = env.step(_answer(f"{secret} or {wrong}"))
    assert obs["text"] == "User: You can only guess one thing. Game over - you lose."
    assert terminated and info["success"] is False
    assert info["reward_components"]["outcome"] == 0.0
    env.close()


def test_naming_the_secret_in_a_question_is_not_a_guess():
    env, secret, _wrong = _start(5)
    question = render_tool_call("talk", {"message": f"Is it the {secret}?"})
    obs, _, terminated, truncated, info = env.step(question)
    assert obs["text"] == f"User: Yes! It is the {secret}."
    assert not terminated and not truncated and "success" not in info
    assert info["reward_components"]["outcome"] == 0.0
    assert env.unwrapped.dialogue.guess is None
    # the one guess is still to be made, and it wins
    _, _, terminated, _, info = env.step(f"<answer>{secret}</answer>")
    assert terminated and info["success"] is True
    assert info["reward_components"]["outcome"] == 1.0
    env.close()


def test_the_guess_recorded_is_the_thing_named_or_the_words_given():
    env, _secret, wrong = _start(6)
    env.step(_answer(f"I think it is the {wrong}."))
    assert env.unwrapped.dialogue.guess == wrong
    env.reset(seed=6)
    _, _, terminated, _, info = env.step(_answer("a unicorn " * 10))  # names nothing
    assert terminated and info["success"] is False
    assert info["reward_components"]["no_guess"] == 0.0  # a guess, if a wrong one
    assert env.unwrapped.dialogue.guess == ("a unicorn " * 10)[:40]
    env.close()


def test_the_dialogue_itself_ends_at_the_guess_and_the_user_stops_answering():
    dialogue = TwentyQuestionsDialogue()
    dialogue.start(task_seed=7, user_seed=0)
    wrong = next(name for name in NAMES if name != dialogue.secret)
    result = dialogue.answer(wrong)
    assert result.stop and not result.success and result.scores == {"outcome": 0.0}
    assert dialogue.done and not dialogue.success
    turn = dialogue.talk("Is it a living thing?")  # no more questions after the guess
    assert turn.stop and turn.text == "(The user has left the conversation.)"
    assert "info" not in turn.scores


@pytest.mark.parametrize("first_right", [True, False])
def test_a_second_guess_to_the_dialogue_changes_nothing(first_right: bool):
    """Code that drives the simulator directly gets one guess too: a later one is refused and
    leaves the verdict of the first (a wrong first guess stays a loss even if the second names
    the secret, and a right one stays a win)."""
    dialogue = TwentyQuestionsDialogue()
    dialogue.start(task_seed=3, user_seed=0)
    wrong = next(name for name in NAMES if name != dialogue.secret)
    dialogue.answer(dialogue.secret if first_right else wrong)
    again = dialogue.answer(wrong if first_right else dialogue.secret)
    assert again.stop and not again.valid
    assert again.scores == {"outcome": 0.0}
    assert again.success is first_right and dialogue.success is first_right
    assert dialogue.guess == (dialogue.secret if first_right else wrong)
