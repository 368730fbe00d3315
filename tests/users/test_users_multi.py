"""Two-seat user envs and negotiation: PettingZoo conformance, seats played by policies."""

from __future__ import annotations

import gymnasium as gym
import pytest
from agentgym.envs.users.seats import scripted_user_policy
from agentgym.wrappers.seats import SeatAsEnv
from users_helpers import SINGLE_IDS, oracle, run_episode, talk

import agentgym
from agentgym.testing import check_multi_agent_env

MULTI_IDS = sorted(r.id for r in agentgym.list_envs("users", multi_agent=True))


def test_every_single_env_has_a_two_seat_version_plus_negotiation():
    assert len(MULTI_IDS) == len(SINGLE_IDS) + 1
    assert "agentgym/Negotiation-v0" in MULTI_IDS


@pytest.mark.parametrize("env_id", MULTI_IDS)
def test_parallel_api_conformance(env_id):
    check_multi_agent_env(lambda: agentgym.make_multi(env_id))


@pytest.mark.parametrize("single_id", SINGLE_IDS)
def test_scripted_user_seat_reproduces_the_single_agent_dialogue(single_id):
    penv = agentgym.make_multi(single_id.replace("-v0", "Seats-v0"))
    seated = SeatAsEnv(penv, "assistant", {"user": scripted_user_policy})
    obs, _ = seated.reset(seed=4)
    texts = [obs["text"]]
    while True:
        obs, _, terminated, truncated, info = seated.step(penv.env.oracle_action())
        if obs["text"] != "(Waiting for the other side.)":
            texts.append(obs["text"])
        if terminated or truncated:
            break
    single = run_episode(gym.make(single_id), oracle, 4)
    assert texts == single[0]
    assert info["success"] is True


def test_user_seat_reply_is_used_but_a_leak_is_replaced_by_the_template():
    penv = agentgym.make_multi("agentgym/UserTravelSeats-v0")
    penv.reset(seed=0)
    user = penv.env.dialogue.user
    facts = list(user.facts.values())
    obs, rewards, _, _, infos = penv.step({"assistant": talk(facts[0].question), "user": ""})
    assert infos["user"]["turn"] == "user" and obs["assistant"]["text"].startswith("(Waiting")
    assert infos["user"]["reference_reply"]
    obs, rewards, _, _, infos = penv.step({"assistant": "ignored", "user": "Hmm, let me think."})
    assert obs["assistant"]["text"] == "User: Hmm, let me think."
    assert rewards["user"] == 1.0
    penv.step({"assistant": talk(facts[1].question), "user": ""})
    leak = f"Sure, and by the way: {facts[2].value}."
    obs, rewards, _, _, infos = penv.step({"assistant": "ignored", "user": leak})
    assert facts[2].value not in obs["assistant"]["text"]
    assert rewards["user"] == -1.0 and infos["assistant"]["user_reply_guarded"] is True
    assert facts[2].id not in user.revealed


def test_user_seat_as_a_gym_env_with_the_oracle_assistant():
    penv = agentgym.make_multi("agentgym/UserIntentionSeats-v0")
    env = SeatAsEnv(penv, "user", {"assistant": penv.oracle_assistant_policy})
    obs, _ = env.reset(seed=1)
    assert "hidden profile" in obs["text"]
    total = 0.0
    for _ in range(30):
        obs, reward, terminated, truncated, _info = env.step("Sure, happy to help with that.")
        total += reward
        if terminated or truncated:
            break
    assert terminated or truncated
    assert total > 0  # every reply passed the guard


def test_negotiation_scripted_seats_reach_deals_and_rewards_are_shares():
    env = agentgym.make_multi("agentgym/Negotiation-v0")
    deals = 0
    for seed in range(20):
        obs, infos = env.reset(seed=seed)
        assert "Your values" in obs["assistant"]["text"]
        policies = {seat: env.scripted_policy(seat) for seat in env.possible_agents}
        while env.agents:
            actions = {s: policies[s](obs[s], infos[s]) for s in env.agents}
            obs, rewards, _terms, _truncs, infos = env.step(actions)
        if infos["assistant"]["success"]:
            deals += 1
            game = env.game
            for seat in env.possible_agents:
                assert rewards[seat] == pytest.approx(game.worth(seat, game.deal[seat]) / 10)
            assert sum(
                game.deal["assistant"][k] + game.deal["user"][k] for k in game.counts
            ) == sum(game.counts.values())
    assert deals >= 15


def test_negotiation_rejects_impossible_proposals_and_out_of_turn_moves():
    env = agentgym.make_multi("agentgym/Negotiation-v0")
    env.reset(seed=0)
    bad = '<tool_call>{"name": "propose", "arguments": {"books": 9, "hats": 0, "balls": 0}}</tool_call>'
    obs, rewards, _, _, infos = env.step({"assistant": bad, "user": "ignored"})
    assert infos["assistant"]["action_valid"] is False
    assert rewards["assistant"] == pytest.approx(-0.1)
    accept = '<tool_call>{"name": "accept", "arguments": {}}</tool_call>'
    obs, rewards, terms, _, infos = env.step({"assistant": "x", "user": accept})
    assert not any(terms.values())
    assert "no proposal" in obs["user"]["text"]


def test_negotiation_same_seed_same_game():
    a, b = (
        agentgym.make_multi("agentgym/Negotiation-v0"),
        agentgym.make_multi("agentgym/Negotiation-v0"),
    )
    assert a.reset(seed=3)[0] == b.reset(seed=3)[0]
