"""verifiers 0.1.14: ``evaluate()`` against a fake OpenAI-compatible server on 127.0.0.1.

The server (starlette + uvicorn in a thread) answers every chat completion with STRUCTURED
``tool_calls``, as a tool-calling model behind vLLM would; verifiers passes them to the
adapter as its pydantic message objects. The env must take them as valid calls, its reply
must carry the call ids, the tools must reach the model, and the env reward must arrive in
verifiers' results.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import gymnasium as gym
import pytest

import agentgym
from agentgym.parsing import render_tool_call

vf = pytest.importorskip("verifiers")
uvicorn = pytest.importorskip("uvicorn")
starlette_apps = pytest.importorskip("starlette.applications")

from starlette.responses import JSONResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402

from agentgym.integrations.session import takes_answer_tool  # noqa: E402
from agentgym.integrations.verifiers import load_environment  # noqa: E402
from tests.integrations.oracle_answers import ANSWER_FAMILIES, oracle_answer  # noqa: E402

SOKOBAN = "agentgym/Sokoban-Tiny-v0"
CODEMATH = "agentgym/CodeMath-L1-v0"
DIRECTIONS = ("up", "left", "down", "right")

Policy = Callable[[dict[str, Any]], tuple[str, dict[str, Any]]]


def _first_user_text(request: dict[str, Any]) -> str:
    user = next(m for m in request["messages"] if m["role"] == "user")
    content = user["content"]
    return content if isinstance(content, str) else json.dumps(content)


class FakeServer:
    """An OpenAI-compatible ``/v1/chat/completions`` that replies with one tool call."""

    def __init__(self, policy: Policy):
        self.policy = policy
        self.requests: list[dict[str, Any]] = []
        self.calls = 0

        async def chat(request: Any) -> JSONResponse:
            body = await request.json()
            self.requests.append(body)
            self.calls += 1
            name, arguments = self.policy(body)
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{self.calls}",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(arguments)},
                    }
                ],
            }
            return JSONResponse(
                {
                    "id": f"cmpl-{self.calls}",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
            )

        app = starlette_apps.Starlette(
            routes=[Route("/v1/chat/completions", chat, methods=["POST"])]
        )
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self._server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )

    def __enter__(self) -> FakeServer:
        self._thread.start()
        while not self._server.started:
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._sock.close()


@pytest.fixture
def client_config(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[int], Any]]:
    monkeypatch.setenv("AGENTGYM_FAKE_OPENAI_KEY", "not-a-secret")

    def make(port: int) -> Any:
        return vf.ClientConfig(
            api_base_url=f"http://127.0.0.1:{port}/v1",
            api_key_var="AGENTGYM_FAKE_OPENAI_KEY",
            max_retries=0,
        )

    yield make


def _sokoban_policy(request: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Cycle the four moves by how many turns this conversation has had."""
    turns = sum(1 for m in request["messages"] if m["role"] == "assistant")
    return "move", {"direction": DIRECTIONS[turns % 4]}


def _evaluate(env: Any, config: Any, n: int) -> list[dict[str, Any]]:
    out = asyncio.run(
        env.evaluate(
            client=config, model="fake", num_examples=n, rollouts_per_example=1, on_progress=[]
        )
    )
    return list(out["outputs"])


def test_evaluate_with_structured_tool_calls_plays_valid_moves_and_scores_the_env(
    client_config: Callable[[int], Any],
):
    max_turns = 6
    env = load_environment(SOKOBAN, num_examples=2, seed=3, max_turns=max_turns)
    with FakeServer(_sokoban_policy) as server:
        outputs = _evaluate(env, client_config(server.port), 2)

    # the env's tools reached the model as OpenAI function schemas
    assert server.requests and all(
        [t["function"]["name"] for t in r.get("tools") or []] == ["move"] for r in server.requests
    )
    assert len(outputs) == 2
    for out in outputs:
        assert out["error"] is None
        completion = out["completion"]
        tool_msgs = [m for m in completion if m["role"] == "tool"]
        calls = [
            json.loads(c) if isinstance(c, str) else c  # results keep calls as JSON text
            for m in completion
            if m["role"] == "assistant"
            for c in m["tool_calls"]
        ]
        # the last call may be cut by max_turns before the env answers it
        assert tool_msgs and len(calls) - 1 <= len(tool_msgs) <= len(calls)
        # each env reply answers its call, and no call was rejected by the parser
        assert [m["tool_call_id"] for m in tool_msgs] == [c["id"] for c in calls][: len(tool_msgs)]
        assert not any("tool call 1" in m["content"] for m in tool_msgs)
        assert all(m["content"].startswith("You ") for m in tool_msgs)
        # the same moves played directly give the same return: the env reward arrived
        direct = gym.make(SOKOBAN)
        direct.reset(seed=out["info"]["seed"])
        total = 0.0
        for i in range(len(tool_msgs)):
            _, r, term, trunc, info = direct.step(
                render_tool_call("move", {"direction": DIRECTIONS[i % 4]})
            )
            assert info["action_valid"]
            total += r
            if term or trunc:
                break
        assert out["reward"] == pytest.approx(total) == pytest.approx(out["metrics"]["env_reward"])


@pytest.mark.parametrize("env_id", [CODEMATH, ANSWER_FAMILIES["search"]])
def test_evaluate_answer_env_earns_the_outcome_through_the_answer_tool(
    client_config: Callable[[int], Any], env_id: str
):
    env = load_environment(env_id, num_examples=2, seed=11, max_turns=4)
    answers, text_rewards = {}, {}
    for row in env.dataset:
        user = next(m for m in row["prompt"] if m["role"] == "user")
        seed = row["info"]["seed"]
        answers[user["content"]] = oracle_answer(env_id, seed)
        direct = gym.make(env_id)  # the same answer as <answer> text on a plain env
        direct.reset(seed=seed)
        text_rewards[seed] = direct.step(f"<answer>{answers[user['content']]}</answer>")[1]
        direct.close()

    def policy(request: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return "answer", {"answer": answers[_first_user_text(request)]}

    with FakeServer(policy) as server:
        outputs = _evaluate(env, client_config(server.port), 2)
    assert all("answer" in [t["function"]["name"] for t in r["tools"]] for r in server.requests)
    for out in outputs:
        assert out["error"] is None
        assert out["reward"] >= 1.0
        assert out["reward"] == pytest.approx(text_rewards[out["info"]["seed"]])
        assert out["metrics"]["success"] == 1.0
        assert out["stop_condition"] == "has_final_env_response"


# ---- every id, and images through evaluate() ---------------------------------------------

VISUAL = "agentgym/VisualClock-v0"


def _texts(messages: list[dict[str, Any]]) -> list[str]:
    """Every piece of text in OpenAI messages (string contents and text parts)."""
    out = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            out.append(content)
        for part in content if isinstance(content, list) else []:
            assert set(part) in ({"type", "text"}, {"type", "image_url"}), part  # no nulls
            out.append(part["text"] if part["type"] == "text" else "")
    return out


def test_every_id_builds_with_the_default_images_and_opens_a_clean_rollout(
    single_agent_id: str, client_config: Callable[[int], Any]
):
    """``load_environment`` (``image_format="data_url"``) on every id: verifiers' own
    ``init_state`` and client turn the row into the OpenAI request the model would get."""
    from verifiers.clients.openai_chat_completions_client import OpenAIChatCompletionsClient

    env_id = single_agent_id
    env = load_environment(env_id, num_examples=2, seed=1, max_turns=2)
    assert isinstance(env, vf.MultiTurnEnv)
    direct = agentgym.make(env_id)
    obs, info = direct.reset(seed=1)
    direct.close()
    answer = ["answer"] if takes_answer_tool(env_id) else []  # the default answer_tool=None
    assert [t.name for t in env.tool_defs] == [
        t["function"]["name"] for t in info["tools"]
    ] + answer
    rows = env.get_eval_dataset(n=2).to_list()
    assert [r["info"]["seed"] for r in rows] == [1, 2]

    async def first_request() -> tuple[list[Any], dict[str, Any]]:
        state = await env.init_state(rows[0], client_config(1), "fake")
        await env.setup_state(state)
        try:
            native, _ = await OpenAIChatCompletionsClient(client_config(1)).to_native_prompt(
                state["prompt"]
            )
            return native, state["agentgym_session"].info
        finally:
            await env.cleanup(state)

    request, session_info = asyncio.run(first_request())
    assert session_info["task_id"] == info["task_id"]
    assert [m["role"] for m in request] == ["system", "user"]
    text = "\n".join(_texts(request))
    assert obs["text"].strip().splitlines()[0] in text  # the task question reached the model
    assert "base64" not in text and len(text) < 50_000
    user = request[1]["content"]
    if obs["images"]:
        urls = [p["image_url"]["url"] for p in user if p["type"] == "image_url"]
        assert len(urls) == len(obs["images"])
        assert all(u.startswith("data:image/png;base64,") for u in urls)
    else:
        assert isinstance(user, str)


def test_evaluate_visual_env_sends_images_as_parts_and_earns_the_answer(
    client_config: Callable[[int], Any],
):
    """verifiers' ``evaluate()`` on a Visual id with default images: a zoom, then the answer."""
    env = load_environment(VISUAL, num_examples=2, seed=4, max_turns=4)
    answers, direct_rewards = {}, {}
    for row in env.dataset:
        probe = agentgym.make(VISUAL, answer_tool=True)
        probe.reset(seed=row["info"]["seed"])
        answer = str(probe.unwrapped._scene.answer)
        _, r1, *_ = probe.step(render_tool_call("zoom", {"box": [0, 0, 320, 240]}))
        _, r2, term, *_ = probe.step(render_tool_call("answer", {"answer": answer}))
        probe.close()
        assert term
        user = next(m for m in row["prompt"] if m["role"] == "user")
        url = next(p["image_url"]["url"] for p in user["content"] if p["type"] == "image_url")
        answers[url] = answer
        direct_rewards[row["info"]["seed"]] = r1 + r2

    def policy(request: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        user = next(m for m in request["messages"] if m["role"] == "user")
        url = next(p["image_url"]["url"] for p in user["content"] if p["type"] == "image_url")
        if not any(m["role"] == "assistant" for m in request["messages"]):
            return "zoom", {"box": [0, 0, 320, 240]}
        return "answer", {"answer": answers[url]}

    with FakeServer(policy) as server:
        outputs = _evaluate(env, client_config(server.port), 2)

    assert len(server.requests) == 4  # two turns per rollout
    for request in server.requests:
        assert "answer" in [t["function"]["name"] for t in request["tools"]]
        text = "\n".join(_texts(request["messages"]))
        assert "What time does the wall clock show?" in text and "base64" not in text
    # the zoom's picture came back as an image part of the tool reply, not as text
    second_turns = [r for r in server.requests if len(r["messages"]) > 2]
    assert len(second_turns) == 2
    for request in second_turns:
        tool = request["messages"][-1]
        assert tool["role"] == "tool" and tool["tool_call_id"]
        assert [p["type"] for p in tool["content"]] == ["image_url", "text"]
        assert "Zoomed" in tool["content"][-1]["text"]
    for out in outputs:
        assert out["error"] is None
        assert out["stop_condition"] == "has_final_env_response"
        assert out["metrics"]["success"] == 1.0
        assert out["reward"] == pytest.approx(direct_rewards[out["info"]["seed"]])
        assert out["reward"] >= 1.0
