"""RLlib: agentgym ids through RLlib's ParallelPettingZooEnv, driven by its own env runner.

On 11f859c the adapter offered only string actions, which no stock RLlib action head
produces, and RLlib's episode batching failed on Visual ids (the image tuple changes
structure between steps). ``actions=[...]`` now gives each agent a ``Discrete`` action
space whose indices map to action strings, and images travel as one exact ``Images`` leaf.
"""

from __future__ import annotations

import numpy as np
import pytest

import agentgym
from agentgym.integrations.rllib import parallel_env
from agentgym.parsing import render_tool_call

ENV_ID = "agentgym/Sokoban-Tiny-v0"
UP = render_tool_call("move", {"direction": "up"})
MOVES = [render_tool_call("move", {"direction": d}) for d in ("up", "down", "left", "right")]


def test_parallel_env_passes_pettingzoo_api_test():
    from pettingzoo.test import parallel_api_test

    parallel_api_test(parallel_env(ENV_ID), num_cycles=5)


def test_real_rllib_wrapper_steps_text():
    pytest.importorskip("ray.rllib.env.wrappers.pettingzoo_env")
    from agentgym.integrations.rllib import rllib_env

    env = rllib_env(ENV_ID)
    obs, infos = env.reset(seed=4)
    assert set(obs) == {"agent"} and "#" in obs["agent"]["text"]
    obs, _rewards, terms, _truncs, infos = env.step({"agent": UP})
    assert infos["agent"]["action_valid"] and "__all__" in terms


def _byte_policy_class():
    """A tiny RLlib TorchRLModule: byte histogram of the observation text -> linear -> logits."""
    import torch
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.distribution.torch.torch_distribution import TorchCategorical
    from ray.rllib.core.rl_module.torch import TorchRLModule

    class BytePolicy(TorchRLModule):
        seen: list = []  # (texts, image shapes) of every forward pass, for the test

        def setup(self):
            self.head = torch.nn.Linear(256, self.action_space.n)

        def _forward(self, batch, **kwargs):
            obs = batch[Columns.OBS]
            texts = [str(t) for t in np.asarray(obs["text"]).reshape(-1)]
            BytePolicy.seen.append((texts, obs["images"]))
            feats = np.zeros((len(texts), 256), dtype=np.float32)
            for i, text in enumerate(texts):
                data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
                feats[i] = np.bincount(data, minlength=256) / max(len(data), 1)
            return {Columns.ACTION_DIST_INPUTS: self.head(torch.from_numpy(feats))}

        def get_inference_action_dist_cls(self):
            return TorchCategorical

        def get_exploration_action_dist_cls(self):
            return TorchCategorical

        def get_train_action_dist_cls(self):
            return TorchCategorical

    return BytePolicy


VISUAL_ID = "agentgym/VisualClock-v0"
VISUAL_ACTIONS = [
    render_tool_call("zoom", {"box": [0, 0, 200, 200]}),
    "<answer>3:15</answer>",
    "<answer>12:00</answer>",
]


@pytest.mark.slow
@pytest.mark.parametrize(("env_id", "actions"), [(ENV_ID, MOVES), (VISUAL_ID, VISUAL_ACTIONS)])
def test_multi_agent_env_runner_sample_drives_the_adapter(env_id, actions):
    pytest.importorskip("ray.rllib")
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner

    from agentgym.integrations.rllib import Images, register

    policy = _byte_policy_class()
    name = register(env_id, name="agentgym-test-" + env_id.split("/")[1], actions=actions)
    config = (
        PPOConfig()
        .environment(name, env_config={"max_turns": 5})
        .multi_agent(policies={"p"}, policy_mapping_fn=lambda agent_id, *a, **kw: "p")
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={"p": RLModuleSpec(module_class=policy)}
            )
        )
        .env_runners(num_env_runners=0, num_envs_per_env_runner=2)
        .debugging(seed=0)
    )
    runner = MultiAgentEnvRunner(config=config)
    try:
        episodes = runner.sample(num_episodes=3)
    finally:
        runner.stop()
    assert len(episodes) >= 3
    assert policy.seen and all(t for texts, _ in policy.seen for t in texts)
    if env_id == VISUAL_ID:  # the screenshots reach the RLModule as uint8 arrays
        images = [img for _, batch in policy.seen for row in batch for img in row.arrays]
        assert images and all(i.dtype == np.uint8 and i.ndim == 3 for i in images)
    task_ids = set()
    for episode in episodes:
        agent = episode.agent_episodes["agent"]
        sampled = [int(a) for a in agent.get_actions()]
        rewards = list(agent.get_rewards())
        observed = agent.get_observations()
        texts, stored_images = list(observed["text"]), list(observed["images"])
        task_id = agent.get_infos()[0]["task_id"]
        task_ids.add(task_id)
        assert len(sampled) == len(rewards) == len(texts) - 1 >= 1
        assert agent.is_terminated or agent.is_truncated
        # replaying the sampled actions on the env directly gives the same episode
        env = agentgym.make(env_id, max_turns=5)
        obs, _ = env.reset(options={"task_id": task_id})
        replay_texts, replay_rewards, replay_images = [obs["text"]], [], [Images(obs["images"])]
        for k in sampled:
            obs, reward, terminated, truncated, _ = env.step(actions[k])
            replay_texts.append(obs["text"])
            replay_images.append(Images(obs["images"]))
            replay_rewards.append(reward)
        env.close()
        assert replay_texts == [str(t) for t in texts]
        assert replay_images == stored_images  # every pixel, every step
        assert np.allclose(replay_rewards, rewards)
        assert terminated or truncated
    assert len(task_ids) > 1  # RLlib's resets reach the env's task sampling
