"""One answer path on every structured client (issue 37): the ``answer`` tool reaches the
outcome over MCP, ``agentgym serve`` and TRL for every family whose episodes end with an
``<answer>`` (code, visual, search), and each says so in the text it opens with.

The reward a structured answer earns must equal what the same answer earns as ``<answer>``
text on a plain env (CodeMath: 1.1, not the 0.0 a structured-only client got before).
verifiers' own ``evaluate()`` loop covers the same families in test_integration_verifiers.py.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import gymnasium as gym
import httpx
import pytest

from agentgym.integrations.session import TOOL_ONLY_ANSWER_NOTE
from agentgym.parsing import ANSWER_TOOL_NOTE, render_answer
from agentgym.server import ServerThread, create_app
from tests.integrations.oracle_answers import ANSWER_FAMILIES, oracle_answer

FAMILIES = list(ANSWER_FAMILIES.values())
SEED = 3


def text_answer_reward(env_id: str, answer: str) -> tuple[float, bool]:
    """Reward and success of answering at once with ``<answer>`` text on a plain env."""
    env = gym.make(env_id)
    try:
        env.reset(seed=SEED)
        _, reward, terminated, _, info = env.step(render_answer(answer))
        assert terminated
        return reward, bool(info["success"])
    finally:
        env.close()


def _structured(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    call = {"id": "c1", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}  # fmt: skip
    return {"role": "assistant", "content": "", "tool_calls": [call]}


# ---- agentgym serve (HTTP; structured tool calls only) --------------------------------------


@pytest.mark.parametrize("env_id", FAMILIES)
def test_serve_offers_the_answer_tool_and_a_structured_answer_earns_the_outcome(env_id):
    answer = oracle_answer(env_id, SEED)
    want_reward, want_success = text_answer_reward(env_id, answer)
    assert want_success
    with ServerThread(create_app(env_id)) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        opened = c.post("/reset", json={"seed": SEED, "episode_id": "e1"}).json()["observation"]
        assert "answer" in [t["function"]["name"] for t in opened["tools"]]
        system = opened["messages"][0]
        assert system["role"] == "system" and ANSWER_TOOL_NOTE in system["content"]
        body = {"action": _structured("answer", {"answer": answer}), "episode_id": "e1"}
        step = c.post("/step", json=body).json()
    assert step["done"] is True and step["observation"]["info"]["success"] is True
    assert step["reward"] == pytest.approx(want_reward)


def test_serve_env_kwargs_can_turn_the_answer_tool_off():
    env_id = ANSWER_FAMILIES["code"]
    app = create_app(env_id, env_kwargs={"answer_tool": False})
    with ServerThread(app) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        opened = c.post("/reset", json={"seed": SEED, "episode_id": "e1"}).json()["observation"]
    assert "answer" not in [t["function"]["name"] for t in opened["tools"]]
    assert ANSWER_TOOL_NOTE not in opened["messages"][0]["content"]


# ---- MCP (the SDK's own client over streamable HTTP; tool calls only) ----------------------


async def _mcp_answer(url: str, answer: str) -> tuple[Any, Any, list[str], Any]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write) as session,
    ):
        init = await session.initialize()
        tools = [t.name for t in (await session.list_tools()).tools]
        opened = await session.call_tool("reset", {"seed": SEED})
        result = await session.call_tool("answer", {"answer": answer})
        return init, opened, tools, result


def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


@pytest.mark.parametrize("env_id", FAMILIES)
def test_mcp_reset_asks_for_the_answer_tool_and_the_tool_earns_the_outcome(env_id):
    pytest.importorskip("mcp")
    from agentgym.integrations.mcp import META_KEY, build_server, http_app

    answer = oracle_answer(env_id, SEED)
    want_reward, _ = text_answer_reward(env_id, answer)
    with ServerThread(http_app(build_server(env_id))) as srv:
        init, opened, tools, result = asyncio.run(_mcp_answer(f"{srv.url}/mcp", answer))
    assert "answer" in tools and "'answer' tool" in (init.instructions or "")
    text = _text(opened)
    # an MCP host never sends text: the opening never asks for <answer> text
    assert "<answer>" not in text and TOOL_ONLY_ANSWER_NOTE in text and 'answer(answer="' in text
    meta = result.meta[META_KEY]
    assert result.is_error is False and meta["terminated"] and meta["success"] is True
    assert meta["reward"] == pytest.approx(want_reward)


# ---- TRL (its environment_factory class, as GRPOTrainer drives it) -------------------------


@pytest.mark.parametrize("env_id", FAMILIES)
def test_trl_answer_method_earns_the_outcome_and_the_opening_asks_for_it(env_id):
    from agentgym.integrations.trl import environment_class

    answer = oracle_answer(env_id, SEED)
    want_reward, _ = text_answer_reward(env_id, answer)
    with environment_class(env_id)() as env:
        opening = env.reset(seed=SEED)
        assert "<answer>" not in opening and TOOL_ONLY_ANSWER_NOTE in opening
        env.answer(answer=answer)
        assert env._session.done and env._session.success
        assert env.get_reward() == pytest.approx(want_reward)
