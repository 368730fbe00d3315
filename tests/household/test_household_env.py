"""agentgym/Household-v0: oracle, random floor, determinism, splits, rewards, snapshots."""

from __future__ import annotations

from collections import Counter

import gymnasium as gym
import numpy as np
import pytest
from agentgym.envs.household.tasks import SPLIT_TABLE, parse_task_id
from agentgym.simulators.household import (
    UNSEEN_FROM,
    generate_home,
    generate_task,
    object_set_is_unseen,
)
from agentgym.simulators.household.world import normalise
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentgym
from agentgym.error import InvalidConfigError, UnknownTaskError
from agentgym.parsing import render_tool_call

ENV_ID = "agentgym/Household-v0"
SPLITS = ("train", "test_seen", "test_unseen", "valid")


def cmd(command: str) -> str:
    return render_tool_call("command", {"command": command})


def make(split: str = "train") -> gym.Env:
    return gym.make(ENV_ID, split=split)


def goal_type(info: dict) -> str:
    layout, slot = parse_task_id(info["task_id"])
    return generate_task(generate_home(layout), slot).goal.type


def test_registered_in_the_household_family():
    record = agentgym.get_record(ENV_ID)
    assert record.family == "household"
    assert ENV_ID in {r.id for r in agentgym.list_envs("household")}


@pytest.mark.parametrize("split", SPLITS)
def test_oracle_solves_every_task_of_every_type(split):
    env = make(split)
    types: Counter[str] = Counter()
    for seed in range(60):
        _, info = env.reset(seed=seed)
        kind = goal_type(info)
        for _turn in range(50):
            _, reward, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
            assert info["action_valid"], info["error"]
            if terminated or truncated:
                break
        assert terminated and info["success"] and reward == 10.0, (seed, kind)
        types[kind] += 1
    assert set(types) == {"pick", "light", "clean", "heat", "cool", "two"}, types


def test_a_random_policy_over_admissible_commands_almost_never_succeeds():
    # Measured: 1 success in 400 episodes (0.25%) with these seeds; the simulator-level
    # rate over 1,000 train tasks was 0.4%. The bound leaves room for noise, not for a
    # world where wandering solves tasks.
    env = make("test_unseen")
    rng = np.random.default_rng(0)
    wins = 0
    for seed in range(400):
        _, info = env.reset(seed=seed)
        while True:
            choices = info["admissible_actions"]
            _, _, terminated, truncated, info = env.step(choices[int(rng.integers(len(choices)))])
            if terminated or truncated:
                wins += info["success"]
                break
    assert wins / 400 <= 0.02


def test_same_seed_same_world_and_observations_across_instances():
    a, b = make(), make()
    obs_a, info_a = a.reset(seed=11)
    obs_b, info_b = b.reset(seed=11)
    assert obs_a == obs_b and info_a == info_b
    rng = np.random.default_rng(5)
    for _ in range(20):
        action = info_a["admissible_actions"][int(rng.integers(len(info_a["admissible_actions"])))]
        step_a, step_b = a.step(action), b.step(action)
        assert step_a[0] == step_b[0] and step_a[4]["state_key"] == step_b[4]["state_key"]
        info_a = step_a[4]
        if step_a[2] or step_a[3]:
            break
    assert a.reset(seed=12)[0] != obs_a


def test_task_id_option_and_split_errors():
    env = make("test_seen")
    obs, info = env.reset(seed=0, options={"task_id": "household-l5-t201"})
    assert info["task_id"] == "household-l5-t201"
    task_line, overview = obs["text"].split("\n\n")
    assert task_line == f"Your task is to: {info['instruction']}"
    assert overview.startswith("You are in the middle of a room. Looking quickly around you")
    with pytest.raises(UnknownTaskError, match="belongs to split 'train'"):
        env.reset(options={"task_id": "household-l5-t3"})
    with pytest.raises(UnknownTaskError):
        env.reset(options={"task_id": "household-l05-t201"})  # not canonical
    with pytest.raises(InvalidConfigError, match="test_unseen"):
        gym.make(ENV_ID, split="dev")


def test_test_is_test_unseen_and_the_split_sizes():
    env = make().unwrapped
    assert list(env.task_ids("test")) == list(env.task_ids("test_unseen"))
    sizes = {s: len(env.task_ids(s)) for s in SPLITS}
    assert sizes == {"train": 60_000, "test_seen": 1_200, "test_unseen": 1_000, "valid": 1_000}


def test_splits_are_disjoint_in_tasks_layouts_and_object_sets():
    env = make().unwrapped
    ids = {s: set(env.task_ids(s)) for s in SPLITS}
    for i, s in enumerate(SPLITS):
        for t in SPLITS[i + 1 :]:
            assert not ids[s] & ids[t], (s, t)

    train_layouts, train_slots = SPLIT_TABLE["train"]
    seen_layouts, _ = SPLIT_TABLE["test_seen"]
    assert seen_layouts == train_layouts  # test_seen: new tasks in the training layouts

    def signature(home):
        return (home.room, home.receptacles, home.objects, home.lamps)

    train_homes = [generate_home(n) for n in train_layouts]
    train_sets = {frozenset(k for _, k in h.objects) for h in train_homes}
    train_sigs = {signature(h) for h in train_homes}
    for split in ("test_unseen", "valid"):
        layouts, _ = SPLIT_TABLE[split]
        assert min(layouts) >= UNSEEN_FROM
        for n in layouts:
            home = generate_home(n)
            kinds = frozenset(k for _, k in home.objects)
            assert kinds not in train_sets and signature(home) not in train_sigs
            assert object_set_is_unseen(kinds)
    assert not any(object_set_is_unseen(s) for s in train_sets)
    assert not set(SPLIT_TABLE["test_unseen"][0]) & set(SPLIT_TABLE["valid"][0])

    # test_seen tasks differ from every train task of their layout in goal or start
    for n in range(0, 300, 30):
        home = generate_home(n)
        train_tasks = {(t.goal, t.placement) for t in (generate_task(home, s) for s in train_slots)}
        for slot in SPLIT_TABLE["test_seen"][1]:
            task = generate_task(home, slot)
            assert (task.goal, task.placement) not in train_tasks


def test_reward_components_for_invalid_malformed_and_successful_turns():
    env = make()
    env.reset(seed=0, options={"task_id": "household-l243-t90"})
    _, reward, terminated, _, info = env.step(cmd("fly to the moon"))
    assert info["reward_components"] == {"outcome": 0.0, "invalid": -1.0, "format": 0.0}
    assert reward == pytest.approx(-0.1) and not info["action_valid"] and not terminated
    assert "not an admissible command" in info["error"]
    obs, reward, _, _, info = env.step("go to shelf 1")  # no tool call at all
    assert info["reward_components"] == {"outcome": 0.0, "invalid": 0.0, "format": -1.0}
    assert reward == pytest.approx(-0.1) and obs["text"].startswith("Invalid action")
    _, _, _, _, info = env.step(cmd("look") + cmd("look"))
    assert info["reward_components"]["format"] == -1.0 and "exactly one" in info["error"]
    # the oracle's plan for this task (two cds on the dresser) ends with outcome 10
    rewards = []
    while True:
        _, reward, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
        rewards.append(reward)
        if terminated or truncated:
            break
    assert rewards[-1] == 10.0 and set(rewards[:-1]) == {0.0} and info["success"]


def test_fifty_turns_then_truncated_without_success():
    env = make()
    env.reset(seed=2)
    for turn in range(1, 51):
        _, _, terminated, truncated, info = env.step(cmd("inventory"))
        assert not terminated and truncated == (turn == 50)
    assert info["success"] is False


def test_snapshot_restore_round_trip_and_repeated_restores():
    env = make()
    env.reset(seed=4)
    base = env.unwrapped
    for _ in range(3):
        env.step(base.oracle_action())
    snap = base.snapshot()
    key = base.state_key()
    future = [base.oracle_action()]
    first = env.step(future[0])
    base.restore(snap)
    assert base.state_key() == key
    assert env.step(future[0])[0] == first[0]
    base.restore(snap)  # restoring twice from one snapshot: the first branch left no trace
    assert base.state_key() == key
    other = make()
    other.reset(seed=99)
    other.unwrapped.restore(snap)
    assert other.unwrapped.state_key() == key and other.step(future[0])[0] == first[0]


def test_state_key_is_history_free():
    env = make()
    env.reset(seed=0, options={"task_id": "household-l243-t90"})
    base = env.unwrapped
    start = base.state_key()
    # path A: detour through a drawer, open it, close it, come back to the shelf
    for c in ("go to drawer 3", "open drawer 3", "close drawer 3", "go to shelf 1"):
        env.step(cmd(c))
    key_a = base.state_key()
    env.reset(seed=0, options={"task_id": "household-l243-t90"})
    assert base.state_key() == start
    # path B: straight to the shelf, with a look and an invalid command on the way
    for c in ("look", "go to bed 1", "dance", "go to shelf 1"):
        env.step(cmd(c))
    assert base.state_key() == key_a != start
    env.step(cmd("take cd 1 from shelf 1"))
    assert base.state_key() != key_a  # what the agent carries is part of the state
    env.step(cmd("put cd 1 in/on shelf 1"))
    assert base.state_key() == key_a


_FUZZ_ENV = make()


@settings(
    max_examples=150,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
@given(
    command=st.text(max_size=300)
    | st.sampled_from(
        ["look", " LOOK. ", "inventory", "go to drawer 1", "Go To  Drawer 1.", "go to drawer 9"]
    )
)
def test_any_command_text_is_accepted_exactly_when_admissible(command):
    env = _FUZZ_ENV
    env.reset(seed=1)
    before = env.unwrapped.state_key()
    admissible = env.unwrapped.admissible_actions()
    _, reward, _, _, info = env.step(cmd(command))
    assert info["action_valid"] == (cmd(normalise(command)) in admissible)
    if not info["action_valid"]:
        assert env.unwrapped.state_key() == before and reward == pytest.approx(-0.1)


def test_surrogates_and_huge_commands_never_raise():
    env = make()
    env.reset(seed=3)
    for text in ("\udcff go to", "go to \ud800cabinet 1", "x" * 200_000, "\x00" * 50):
        _, reward, _, _, info = env.step(cmd(text))
        assert not info["action_valid"] and reward == pytest.approx(-0.1)
