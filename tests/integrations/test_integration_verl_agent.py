"""verl-agent environment manager: groups share tasks, anchors are state keys, done envs rest."""

from __future__ import annotations

import numpy as np

from agentgym.integrations.verl_agent import AgentGymEnvironmentManager
from agentgym.parsing import render_tool_call

ENV_ID = "agentgym/Sokoban-Tiny-v0"
UP = render_tool_call("move", {"direction": "up"})


def test_groups_anchors_validity_and_done_handling():
    mgr = AgentGymEnvironmentManager(ENV_ID, env_num=2, group_n=2, seed=10)
    try:
        obs, infos = mgr.reset()
        assert len(obs["text"]) == 4 and obs["image"] is None
        assert infos[0]["task_id"] == infos[1]["task_id"] != infos[2]["task_id"]
        assert obs["anchor"][0] == obs["anchor"][1]  # same task, same start state
        obs2, rewards, dones, infos2 = mgr.step([UP, UP, "garbage", UP])
        assert rewards.dtype == np.float32 and dones.shape == (4,)
        assert infos2[0]["is_action_valid"] and not infos2[2]["is_action_valid"]
        assert obs2["anchor"][0] == obs2["anchor"][1]  # same action from the same state
        assert "Action: " + UP in obs2["text"][0]
        for _ in range(12):
            obs2, rewards, dones, infos2 = mgr.step([UP] * 4)
            if dones.all():
                break
        assert dones.all()  # every episode ends within the turn budget
        _, rewards, dones, infos3 = mgr.step([UP] * 4)  # finished envs are not stepped
        assert not rewards.any() and all(i.get("already_done") for i in infos3)
        won = mgr.success_evaluator()["success_rate"]
        assert won.shape == (4,) and set(won) <= {0.0, 1.0}
        _obs3, infos4 = mgr.reset()
        assert infos4[0]["task_id"] != infos[0]["task_id"]  # the next batch has new tasks
    finally:
        mgr.close()


def test_visual_observations_are_text_with_an_images_left_out_note():
    mgr = AgentGymEnvironmentManager("agentgym/VisualChart-v0", env_num=1, group_n=1, seed=0)
    try:
        obs, _ = mgr.reset()
        assert "image(s) left out" in obs["text"][0] and "base64" not in obs["text"][0]
        zoom = render_tool_call("zoom", {"box": [0, 0, 100, 100]})
        obs, _, _, _ = mgr.step([zoom])
        assert obs["text"][0].count("image(s) left out") >= 2  # the task and the zoom result
    finally:
        mgr.close()
