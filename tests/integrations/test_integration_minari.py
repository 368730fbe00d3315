"""Minari 0.5: DataCollector records agentgym episodes; create_dataset; load_dataset; replay.

On 11f859c ``DataCollector(gym.make(id))`` failed at construction on every id (no Minari
serialisation for ``RGBImages`` or ``UnicodeText``).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import agentgym
from agentgym.parsing import render_tool_call

minari = pytest.importorskip("minari")
pytest.importorskip("jax")

pytestmark = pytest.mark.slow

TEXT_ID = "agentgym/Sokoban-Tiny-v0"
VISUAL_ID = "agentgym/VisualClock-v0"
UP = render_tool_call("move", {"direction": "up"})


@pytest.fixture(autouse=True)
def _datasets_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "datasets"))


def test_plain_collector_is_refused_naming_the_helper_which_constructs_on_every_id():
    """A plain DataCollector used to construct, then fail when the first episode was written
    (a bare AssertionError with hdf5, ArrowInvalid with arrow); now it is refused at once."""
    from minari import DataCollector

    from agentgym.integrations.minari import data_collector

    for record in agentgym.list_envs(multi_agent=False):
        with pytest.raises(TypeError, match=r"agentgym\.integrations\.minari\.data_collector"):
            DataCollector(gym.make(record.id))
        env = data_collector(gym.make(record.id), record_infos=True)
        assert env.observation_space["text"] == gym.make(record.id).observation_space["text"]
        env.close()


def _play(env, seed: int, actions: list[str]) -> tuple[list[dict], list[float]]:
    obs, _ = env.reset(seed=seed)
    seen, rewards = [obs], []
    for action in actions:
        obs, reward, terminated, truncated, _ = env.step(action)
        seen.append(obs)
        rewards.append(float(reward))
        if terminated or truncated:
            break
    return seen, rewards


@pytest.mark.parametrize(
    ("env_id", "episodes"),
    [
        (TEXT_ID, [(3, [UP, "no tool call here: 中文 😀", UP]), (4, [UP])]),
        (VISUAL_ID, [(5, ["look", "<answer>3:15</answer>"]), (6, ["<answer>1</answer>"])]),
    ],
)
def test_record_create_load_keeps_text_images_actions_rewards(env_id, episodes):
    from agentgym.integrations.minari import data_collector, episode_observations

    env = data_collector(gym.make(env_id, max_turns=2))
    recorded = [_play(env, seed, actions) for seed, actions in episodes]
    name = "agentgym/" + env_id.split("/")[1].lower() + "/test-v0"
    env.create_dataset(name, algorithm_name="scripted", author="agentgym tests")
    env.close()

    dataset = minari.load_dataset(name)
    assert dataset.total_episodes == len(episodes)
    assert dataset.spec.env_spec.id == env_id
    for episode, (seed, actions), (observations, rewards) in zip(
        dataset.iterate_episodes(), episodes, recorded, strict=True
    ):
        loaded = episode_observations(episode)
        assert len(loaded) == len(observations)
        for got, want in zip(loaded, observations, strict=True):
            assert got["text"] == want["text"]
            assert len(got["images"]) == len(want["images"])
            for a, b in zip(got["images"], want["images"], strict=True):
                assert a.dtype == np.uint8 and np.array_equal(a, b)  # exact, not JPEG
        assert list(episode.actions) == actions[: len(rewards)]
        assert np.allclose(episode.rewards, rewards)
        # and the recording is what direct play with the same seed gives
        direct, direct_rewards = _play(gym.make(env_id, max_turns=2), seed, actions)
        assert [o["text"] for o in direct] == [o["text"] for o in loaded]
        assert direct_rewards == rewards
    if env_id == VISUAL_ID:
        first = episode_observations(next(dataset.iterate_episodes()))[0]
        assert first["images"] and first["images"][0].ndim == 3


@pytest.mark.parametrize("env_id", [TEXT_ID, VISUAL_ID])
def test_record_infos_keeps_one_info_shape_from_reset_to_the_end(env_id):
    """record_infos=True (the docs recommend it) used to fail on every id: reset and step
    infos differ in keys. Each step now stores the same fields, and the whole info as JSON."""
    import json

    from agentgym.integrations.minari import data_collector

    actions = ["no call \ud800 here", UP, "<answer>3:15</answer>"]
    env = data_collector(gym.make(env_id, max_turns=3), record_infos=True)
    want = [env.reset(seed=7)[1]]
    for action in actions:
        *_, info = env.step(action)
        want.append(info)
        if len(want) == 4:
            break
    env.reset(seed=8)
    env.step(UP)
    name = "agentgym/" + env_id.split("/")[1].lower() + "/infos-v0"
    env.create_dataset(name, algorithm_name="scripted", author="agentgym tests")
    env.close()

    episode = next(minari.load_dataset(name).iterate_episodes())
    infos = episode.infos
    assert sorted(infos) == [
        "action_valid", "error", "json", "reward_components", "state_key", "success"
    ]  # fmt: skip
    assert len(infos["json"]) == len(want) == 4
    assert [json.loads(j) for j in infos["json"]] == [
        json.loads(json.dumps(i, default=str)) for i in want
    ]
    assert list(infos["state_key"]) == [i["state_key"] for i in want]
    assert list(infos["action_valid"]) == [True] + [i["action_valid"] for i in want[1:]]
    assert list(infos["error"]) == [""] + [i["error"] or "" for i in want[1:]]
    assert infos["error"][1] and not infos["action_valid"][1]  # the text without a call
    # Minari 0.5 loads the nested dict back as one dict per step
    zero = dict.fromkeys(want[1]["reward_components"], 0.0)
    assert list(infos["reward_components"]) == [zero] + [i["reward_components"] for i in want[1:]]
    assert next(iter(episode.actions)) == "no call \ufffd here"  # Arrow strings are strict UTF-8
