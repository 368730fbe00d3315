"""Twenty questions' reward defaults do not teach degenerate play, and the opening line
never tells tasks apart."""

import gymnasium as gym
import pytest

import agentgym  # noqa: F401
from agentgym.parsing import render_tool_call

ENV = "agentgym/UserTwentyQuestions-v0"


def _talk(message):
    return render_tool_call("talk", {"message": message})


def _ask_until_the_turns_run_out(env, seed):
    """The best no-guess play: the oracle's questions (all the information there is), never
    a guess; once nothing is left to ask, the last question again (until the turns run out or
    the user, tired of repeats, leaves)."""
    _, info = env.reset(seed=seed)
    total, done, last = 0.0, False, _talk("Is it a living thing?")
    while not done:
        action = env.unwrapped.oracle_action()
        if '"answer"' in action:
            action = last
        last = action
        _, reward, terminated, truncated, info = env.step(action)
        total += reward
        done = terminated or truncated
    assert not info["success"]
    assert info["reward_components"]["no_guess"] == -1.0
    return total


@pytest.mark.parametrize("seed", range(6))
def test_running_out_of_turns_without_a_guess_pays_less_than_any_guess(seed):
    env = gym.make(ENV)
    no_guess = _ask_until_the_turns_run_out(env, seed)
    # the worst guess: a wrong one on the first turn, with no information earned
    _, info = env.reset(seed=seed)
    secret = env.unwrapped.dialogue.secret
    wrong = next(a for a in info["admissible_actions"] if '"answer"' in a and secret not in a)
    _, wrong_guess, terminated, _, _ = env.step(wrong)
    assert terminated
    assert no_guess < wrong_guess, (no_guess, wrong_guess)


def test_opening_line_is_the_same_for_every_task_and_secret():
    env = gym.make(ENV)
    openings, secrets = set(), set()
    for split in ("train", "test"):
        env = gym.make(ENV, split=split)
        for seed in range(120):
            obs, _ = env.reset(seed=seed)
            openings.add(obs["text"])
            secrets.add(env.unwrapped.dialogue.secret)
    assert len(secrets) == 26
    assert len(openings) == 1, openings
