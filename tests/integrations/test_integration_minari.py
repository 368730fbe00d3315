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


def test_data_collector_constructs_on_every_single_agent_id():
    from minari import DataCollector

    for record in agentgym.list_envs(multi_agent=False):
        env = DataCollector(gym.make(record.id))
        assert env.observation_space == gym.make(record.id).observation_space
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
