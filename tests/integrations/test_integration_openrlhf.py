"""OpenRLHF: AgentInstance/AgentExecutor return what MultiTurnAgentExecutor reads."""

from __future__ import annotations

import asyncio

import pytest

from agentgym.integrations.openrlhf import make_agent_classes, parse_label
from agentgym.parsing import render_tool_call

ENV_ID = "agentgym/Sokoban-Tiny-v0"
UP = render_tool_call("move", {"direction": "up"})


def test_labels_name_the_episode():
    assert parse_label('{"seed": 4}') == (4, None)
    assert parse_label(7) == (7, None)
    assert parse_label("sokoban-5x5-b1-3") == (None, {"task_id": "sokoban-5x5-b1-3"})
    assert parse_label(None) == (None, None)


def test_instance_against_real_openrlhf():
    agent = pytest.importorskip("openrlhf.utils.agent")
    pytest.importorskip("torch")
    Instance, Executor = make_agent_classes(ENV_ID)
    assert issubclass(Instance, agent.AgentInstanceBase)
    assert issubclass(Executor, agent.MultiTurnAgentExecutor)
    assert Executor().agent_instance_cls is Instance

    async def main():
        inst = Instance()
        first = await inst.reset({"observation": "ignored", "label": '{"seed": 2}'})
        assert first["observation"].endswith("<|im_start|>assistant\n")
        out = await inst.step(
            {"observation_text": first["observation"], "action_text": UP, "label": "2"}
        )
        return out

    out = asyncio.run(main())
    assert {"rewards", "scores", "environment_feedback", "done", "extra_logs"} <= set(out)
    assert out["rewards"].item() == pytest.approx(-0.1)  # one step cost, valid move
    assert out["environment_feedback"].startswith("<|im_end|>\n<|im_start|>user\n")
