"""MCP: env tools served with the official ``mcp`` SDK, driven by the SDK's own client.

Each family is played to the end with its oracle, once over MCP and once on a local mirror
env with the same seed: the tool results must be the mirror's observations, rewards and
flags, step for step. Transports: stdio (``agentgym mcp ID`` as a subprocess) and
streamable HTTP on 127.0.0.1 (in-process server threads, and the CLI's ``--transport http``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import numpy as np
import pytest

mcp = pytest.importorskip("mcp")

import httpx  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from PIL import Image  # noqa: E402

from agentgym.integrations.mcp import META_KEY, build_server, http_app  # noqa: E402
from agentgym.integrations.mcp_transport import session_bound  # noqa: E402
from agentgym.integrations.session import TextSession, tool_only_text  # noqa: E402
from agentgym.server import ServerThread  # noqa: E402

SOKOBAN = "agentgym/Sokoban-Tiny-v0"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# ---- helpers ----------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def stdio_session(env_id: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "agentgym", "mcp", env_id])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@contextlib.asynccontextmanager
async def http_session(url: str) -> AsyncIterator[ClientSession]:
    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@contextlib.contextmanager
def http_server(env_id: str) -> Iterator[str]:
    """An in-process MCP server for ``env_id`` on a free 127.0.0.1 port; yields its URL."""
    with ServerThread(http_app(build_server(env_id))) as srv:
        yield f"{srv.url}/mcp"


def _texts(result: Any) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


def _images(result: Any) -> list[np.ndarray]:
    out = []
    for c in result.content:
        if c.type == "image":
            assert c.mime_type == "image/png"
            raw = base64.b64decode(c.data, validate=True)
            assert raw.startswith(PNG_MAGIC)
            out.append(np.asarray(Image.open(io.BytesIO(raw)).convert("RGB")))
    return out


def _as_call(action: str) -> tuple[str, dict[str, Any]]:
    """An oracle's text action as an MCP tool call (``<answer>`` -> the ``answer`` tool)."""
    answer = re.fullmatch(r"\s*<answer>(.*)</answer>\s*", action, re.S)
    if answer:
        return "answer", {"answer": answer.group(1)}
    call = re.fullmatch(r"\s*<tool_call>(.*)</tool_call>\s*", action, re.S)
    assert call, f"oracle action is not one call: {action!r}"
    payload = json.loads(call.group(1))
    return payload["name"], payload["arguments"]


def _observation_text(message: dict[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "\n".join(p["text"] for p in content if p.get("type") == "text" and p["text"])


def _observation_images(message: dict[str, Any]) -> list[np.ndarray]:
    content = message["content"]
    if isinstance(content, str):
        return []
    return [p["image"] for p in content if p.get("type") == "image"]


async def play_oracle(session: ClientSession, env_id: str, seed: int) -> int:
    """Play ``env_id``'s oracle over MCP and on a mirror env; assert they agree; return steps."""
    mirror = TextSession(env_id, answer_tool=None, image_format="array", feedback_role="tool")
    try:
        start = mirror.reset(seed=seed)
        listed = {t.name: t.input_schema for t in (await session.list_tools()).tools}
        assert set(listed) == {"reset"} | {t["function"]["name"] for t in start.tools}
        for tool in start.tools:
            assert listed[tool["function"]["name"]] == tool["function"]["parameters"]

        opened = await session.call_tool("reset", {"seed": seed})
        assert not opened.is_error
        meta = opened.meta[META_KEY]
        assert meta["task_id"] == start.info["task_id"]
        # an MCP host sends only tool calls: an env offering the answer tool asks for it
        reword = tool_only_text if mirror.env.unwrapped.answer_tool else (lambda text: text)
        assert _texts(opened) == reword(
            "\n".join([start.info["system_prompt"], _observation_text(start.messages[-1])])
        )
        for got, want in zip(_images(opened), _observation_images(start.messages[-1]), strict=True):
            np.testing.assert_array_equal(got, want)

        steps = 0
        while not mirror.done:
            action = mirror.env.unwrapped.oracle_action()
            name, arguments = _as_call(action)
            result = await session.call_tool(name, arguments)
            want = mirror.step(
                {
                    "content": "",
                    "tool_calls": [
                        {
                            "id": "x",
                            "type": "function",
                            "function": {"name": name, "arguments": arguments},
                        }
                    ],
                }
            )
            steps += 1
            meta = result.meta[META_KEY]
            assert result.is_error is False, _texts(result)
            assert _texts(result) == reword(_observation_text(want.messages[-1]))
            got_images = _images(result)
            want_images = _observation_images(want.messages[-1])
            assert len(got_images) == len(want_images)
            for got, exp in zip(got_images, want_images, strict=True):
                assert got.shape == exp.shape
                np.testing.assert_array_equal(got, exp)
            assert meta["reward"] == pytest.approx(want.reward)
            assert meta["reward_components"] == pytest.approx(want.info["reward_components"])
            assert (meta["terminated"], meta["truncated"]) == (want.terminated, want.truncated)
            assert meta["info"]["state_key"] == want.info["state_key"]
            assert steps <= 40, "the oracle did not finish"
        assert meta["success"] is True and mirror.success
        ended = await session.call_tool(name, arguments)
        assert ended.is_error and "ended" in _texts(ended)
        return steps
    finally:
        mirror.close()


# ---- stdio ------------------------------------------------------------------------------------


def test_stdio_sokoban_plays_like_the_env_and_reports_errors_as_tool_errors():
    async def main() -> None:
        async with stdio_session(SOKOBAN) as session:
            early = await session.call_tool("move", {"direction": "up"})
            assert early.is_error and "reset" in _texts(early)
            assert await play_oracle(session, SOKOBAN, seed=0) == 2

            await session.call_tool("reset", {"seed": 0})
            unknown = await session.call_tool("mvoe", {"direction": "up"})
            assert unknown.is_error and "mvoe" in _texts(unknown)
            assert unknown.meta[META_KEY]["reward_components"]["format"] == -1.0
            bad = await session.call_tool("move", {"direction": "diagonal"})
            assert bad.is_error and bad.meta[META_KEY]["action_valid"] is False
            wrong_type = await session.call_tool("move", {"direction": 7})
            assert wrong_type.is_error
            bad_seed = await session.call_tool("reset", {"seed": "zero"})
            assert bad_seed.is_error and "seed" in _texts(bad_seed)
            bad_task = await session.call_tool("reset", {"task_id": "no-such-task"})
            assert bad_task.is_error and "reset failed" in _texts(bad_task)
            after = await session.call_tool("move", {"direction": "up"})
            assert after.is_error and "reset" in _texts(after)  # a failed reset needs a new one
            again = await session.call_tool("reset", {"seed": 0})
            assert not again.is_error

    asyncio.run(main())


def test_stdio_visual_images_are_png_image_content_of_the_observed_size():
    env_id = "agentgym/VisualClock-v0"

    async def main() -> None:
        async with stdio_session(env_id) as session:
            await play_oracle(session, env_id, seed=0)
            opened = await session.call_tool("reset", {"seed": 3})
            (image,) = _images(opened)
            mirror = TextSession(env_id, image_format="array")
            try:
                want = mirror.reset(seed=3).messages[-1]["content"][0]["image"]
            finally:
                mirror.close()
            assert image.shape == want.shape and image.shape[2] == 3
            np.testing.assert_array_equal(image, want)

    asyncio.run(main())


# ---- streamable HTTP --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "env_id",
    ["agentgym/CodeMath-L1-v0", "agentgym/UserTwentyQuestions-v0", "agentgym/WebShopText-v0"],
)
def test_http_families_play_like_the_env(env_id):
    async def main() -> None:
        with http_server(env_id) as url:
            async with http_session(url) as session:
                await play_oracle(session, env_id, seed=0)

    asyncio.run(main())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def cli_http_url() -> Iterator[str]:
    """``agentgym mcp SOKOBAN --transport http --port P`` as a subprocess; yields its URL."""
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentgym",
            "mcp",
            SOKOBAN,
            "--transport",
            "http",
            "--port",
            str(port),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # printed once the env is built, before uvicorn starts
        assert f"127.0.0.1:{port}/mcp" in line, line
        url = f"http://127.0.0.1:{port}/mcp"
        with httpx.Client() as client:
            deadline = time.monotonic() + 120.0  # uvicorn may start slowly on a busy machine
            while True:  # wait until uvicorn accepts connections
                if proc.poll() is not None:
                    raise AssertionError(f"server exited: {proc.stderr.read()}")
                with contextlib.suppress(httpx.TransportError):
                    client.get(url, timeout=5.0)
                    break
                if time.monotonic() > deadline:
                    raise AssertionError("server never accepted a connection")
                time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_two_sessions_at_once_are_isolated(cli_http_url):
    """Two clients step one server concurrently; each sees only its own env."""

    async def play(url: str, moves: list[str], seed: int) -> list[Any]:
        async with http_session(url) as session:
            await session.call_tool("reset", {"seed": seed})
            out = []
            for move in moves:
                out.append((await session.call_tool("move", {"direction": move})).meta[META_KEY])
                await asyncio.sleep(0)  # let the other session's call interleave
            return out

    def local(moves: list[str], seed: int) -> list[tuple[str, float, bool]]:
        s = TextSession(SOKOBAN)
        s.reset(seed=seed)
        from agentgym.parsing import render_tool_call

        out = []
        for m in moves:
            t = s.step(render_tool_call("move", {"direction": m}))
            out.append((t.info["state_key"], t.reward, t.terminated))
        s.close()
        return out

    a_moves, b_moves = ["up", "left"], ["left", "left", "up", "right"]

    async def main() -> None:
        a, b = await asyncio.gather(play(cli_http_url, a_moves, 0), play(cli_http_url, b_moves, 0))
        assert [(m["info"]["state_key"], m["reward"], m["terminated"]) for m in a] == local(
            a_moves, 0
        )
        assert [(m["info"]["state_key"], m["reward"], m["terminated"]) for m in b] == local(
            b_moves, 0
        )
        assert a[-1]["success"] is True and b[-1]["terminated"] is False

    asyncio.run(main())


def test_default_client_falls_back_to_a_session(cli_http_url):
    """``mcp.Client`` in its default ``mode="auto"`` gets a session (and so an env).

    A client pinned to the stateless 2026-07-28 revision is told why it cannot play.
    """

    async def main() -> None:
        async with mcp.Client(cli_http_url) as client:
            assert client.protocol_version == "2025-11-25"
            await client.call_tool("reset", {"seed": 0})
            moved = await client.call_tool("move", {"direction": "up"})
            assert moved.is_error is False and "You moved up." in _texts(moved)
        async with mcp.Client(cli_http_url, mode="2026-07-28") as stateless:
            names = [t.name for t in (await stateless.list_tools()).tools]
            assert names == ["reset", "move"]
            refused = await stateless.call_tool("reset", {"seed": 0})
            assert refused.is_error and "initialize handshake" in _texts(refused)

    asyncio.run(main())


def test_lone_surrogates_reach_the_env_as_data_and_come_back_as_valid_text():
    """In process (``mcp.Client(server)``, no JSON on the way) model strings reach the env as is."""

    def utf8(result: Any) -> str:
        text = _texts(result)
        text.encode("utf-8")  # raises on a lone surrogate
        json.dumps(result.meta or {}, ensure_ascii=False).encode("utf-8")
        return text

    async def main() -> None:
        async with mcp.Client(build_server(SOKOBAN), mode="legacy") as client:
            await client.call_tool("reset", {"seed": 0})
            bad_value = await client.call_tool("move", {"direction": "\ud800"})
            assert bad_value.is_error and "is not one of" in utf8(bad_value)
            assert bad_value.meta[META_KEY]["reward_components"]["format"] == -1.0
            bad_name = await client.call_tool("mo\ud800ve", {"dir\udfff": "up"})
            assert bad_name.is_error and "unknown tool" in utf8(bad_name)
            bad_task = await client.call_tool("reset", {"task_id": "\udfff"})
            assert bad_task.is_error and "reset failed" in utf8(bad_task)
            await client.call_tool("reset", {"seed": 0})
            moved = await client.call_tool("move", {"direction": "up"})
            assert moved.is_error is False and "You moved up." in utf8(moved)

    asyncio.run(main())


def test_undecodable_json_gets_a_parse_error_and_the_session_lives_on(cli_http_url):
    """A lone-surrogate JSON escape (the SDK client cannot even send one) is refused, not fatal."""
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

    def post(client: httpx.Client, body: bytes) -> httpx.Response:
        return client.post(cli_http_url, content=body, headers=headers)

    def data(response: httpx.Response) -> dict[str, Any]:
        (line,) = [ln[5:] for ln in response.text.splitlines() if ln.startswith("data:")]
        return json.loads(line)

    with httpx.Client(timeout=30) as client:
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        }
        opened = post(client, json.dumps(init).encode())
        headers["Mcp-Session-Id"] = opened.headers["mcp-session-id"]
        headers["MCP-Protocol-Version"] = "2025-11-25"
        post(client, b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        call = (
            b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":%s}}'
        )
        assert data(post(client, call % (2, b"reset", b'{"seed":0}')))["result"]["isError"] is False
        refused = post(client, call % (3, b"move", rb'{"direction":"\ud800"}'))
        assert refused.status_code == 400 and refused.json()["error"]["code"] == -32700
        moved = data(post(client, call % (4, b"move", b'{"direction":"up"}')))["result"]
        assert moved["isError"] is False and "You moved up." in moved["content"][0]["text"]


def test_each_session_closes_its_env_when_it_ends(monkeypatch):
    closed: list[str] = []
    original = TextSession.close

    def close(self: TextSession) -> None:
        closed.append(self.info.get("task_id", "probe"))
        original(self)

    monkeypatch.setattr(TextSession, "close", close)
    server = build_server(SOKOBAN)
    closed.clear()  # the probe env that read the tool schemas

    async def main() -> None:
        for seed in (0, 1):
            async with mcp.Client(server, mode="legacy") as client:
                opened = await client.call_tool("reset", {"seed": seed})
                task_id = opened.meta[META_KEY]["task_id"]
                assert len(closed) == seed  # only earlier sessions' envs are closed
            assert closed[-1] == task_id
        async with mcp.Client(server, mode="legacy") as client:
            await client.list_tools()  # a session that never reset built no env

    asyncio.run(main())
    assert len(closed) == 2


def test_cli_mistakes_are_one_line_errors(capsys):
    from agentgym.cli import main

    assert main(["mcp", "agentgym/Nope-v0"]) == 2
    assert "Did you mean" in capsys.readouterr().err
    assert main(["mcp", SOKOBAN, "--env-kwargs", '{"bogus": 1}']) == 2
    assert "bogus" in capsys.readouterr().err
    assert main(["mcp", "agentgym/Negotiation-v0"]) == 2
    assert "multi-agent" in capsys.readouterr().err


# ---- issue 38: sessions without an env, failed first resets, closing tags, stdio repair ----


_INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}


class _RawSession:
    """An MCP session over plain HTTP requests: no standing GET stream, so between its
    requests the server sees it idle (as a client that thinks for minutes)."""

    def __init__(self, client: httpx.Client, url: str):
        self.client, self.url = client, url
        self.headers = {"Accept": "application/json, text/event-stream"}
        opened = self.post(_INIT)
        assert opened.status_code == 200, opened.text
        self.headers["Mcp-Session-Id"] = opened.headers["mcp-session-id"]
        self.headers["MCP-Protocol-Version"] = "2025-11-25"

    def post(self, body: dict[str, Any]) -> httpx.Response:
        return self.client.post(self.url, json=body, headers=self.headers)

    def call(self, request_id: int, name: str, arguments: dict[str, Any]) -> httpx.Response:
        params = {"name": name, "arguments": arguments}
        return self.post(
            {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
        )

    def result(self, request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        reply = self.call(request_id, name, arguments)
        (line,) = [ln[5:] for ln in reply.text.splitlines() if ln.startswith("data:")]
        return json.loads(line)["result"]


def test_bare_initialize_floods_cannot_lock_out_clients_and_envs_are_the_limit():
    """Sessions are admitted by what they hold: envs count against ``max_sessions``; bare
    sessions are bounded apart and the least recently used idle one makes room, never one
    that holds an env, however long it has been idle."""
    flood = 200  # past the bound on sessions in all (2 + 64)
    server = build_server(SOKOBAN)
    with ServerThread(http_app(server, max_sessions=2)) as srv, httpx.Client(timeout=60) as raw:
        url = f"{srv.url}/mcp"
        holder = _RawSession(raw, url)  # idle between its requests: evictable but for its env
        assert holder.result(2, "reset", {"seed": 0})["isError"] is False
        bare = [_RawSession(raw, url) for _ in range(flood)]  # every initialize is admitted
        assert bare[0].call(2, "reset", {"seed": 0}).status_code == 404  # the oldest made room
        manager = srv.server.config.app.state.session_manager
        assert manager.evicted == flood - (session_bound(2) - 1)  # all but the holder fit
        moved = holder.result(3, "move", {"direction": "up"})
        assert moved["isError"] is False and "You moved up." in moved["content"][0]["text"]

        async def main() -> None:
            async with http_session(url) as b:
                assert not (await b.call_tool("reset", {"seed": 1})).is_error
                async with http_session(url) as c:
                    full = await c.call_tool("reset", {"seed": 2})
                    assert full.is_error and "maximum of 2 envs" in _texts(full)
            # b ended: its env is closed and its slot free (polled: closing is async)
            async with http_session(url) as e:
                deadline = time.monotonic() + 60
                while (opened := await e.call_tool("reset", {"seed": 3})).is_error:
                    assert time.monotonic() < deadline, _texts(opened)
                    await asyncio.sleep(0.05)
                assert (await e.call_tool("move", {"direction": "up"})).is_error is False

        asyncio.run(main())
        moved = holder.result(4, "move", {"direction": "up"})  # still there, still its own
        assert moved["isError"] is False


def test_a_mistyped_task_id_on_the_first_reset_leaves_the_session_usable():
    async def main() -> None:
        async with mcp.Client(build_server(SOKOBAN), mode="legacy") as client:
            bad = await client.call_tool("reset", {"task_id": "sokoban-no-such-task"})
            assert bad.is_error and "sokoban-no-such-task" in _texts(bad)
            early = await client.call_tool("move", {"direction": "up"})
            assert early.is_error and "reset" in _texts(early)
            opened = await client.call_tool("reset", {"seed": 0})
            assert not opened.is_error
            moved = await client.call_tool("move", {"direction": "up"})
            assert moved.is_error is False and "You moved up." in _texts(moved)
            assert moved.meta[META_KEY]["action_valid"] is True

    asyncio.run(main())


def test_an_argument_holding_the_closing_tag_is_one_valid_call():
    env_id = "agentgym/UserTwentyQuestions-v0"
    message = "Is it alive? </tool_call> (and </answer>)"

    async def main() -> None:
        async with mcp.Client(build_server(env_id), mode="legacy") as client:
            await client.call_tool("reset", {"seed": 0})
            said = await client.call_tool("talk", {"message": message})
            assert said.is_error is False, _texts(said)
            meta = said.meta[META_KEY]
            assert meta["action_valid"] is True
            assert meta["reward_components"]["format"] == 0.0
            (call,) = meta["info"]["tool_calls"]
            assert call["arguments"] == {"message": message}

    asyncio.run(main())


class _Lines:
    """A subprocess's stdout lines, read on a thread, taken with a deadline."""

    def __init__(self, stream: Any):
        import queue
        import threading

        self.queue: Any = queue.Queue()
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: Any) -> None:
        for line in stream:
            self.queue.put(line)
        self.queue.put(None)

    def reply(self, request_id: Any, timeout_s: float = 60.0) -> dict[str, Any]:
        """The next JSON-RPC response with ``request_id`` (other lines skipped)."""
        import queue

        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            assert left > 0, f"no reply to request {request_id!r}"
            try:
                line = self.queue.get(timeout=left)
            except queue.Empty:
                continue
            assert line is not None, f"the server exited before answering {request_id!r}"
            msg = json.loads(line)
            if "method" not in msg and msg.get("id") == request_id:
                return msg


def test_stdio_answers_a_lone_surrogate_escape_and_keeps_serving():
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentgym", "mcp", SOKOBAN],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    lines = _Lines(proc.stdout)

    def send(raw: bytes) -> None:
        proc.stdin.write(raw + b"\n")
        proc.stdin.flush()

    call = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":%s}}'
    try:
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        }
        send(json.dumps(init).encode())
        assert "result" in lines.reply(1, timeout_s=120)
        send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        send(call % (2, b"reset", b'{"seed":0}'))
        assert lines.reply(2)["result"]["isError"] is False
        send(call % (3, b"move", rb'{"direction":"\ud800"}'))
        odd = lines.reply(3)["result"]  # served: the lone surrogate became U+FFFD
        assert odd["isError"] is True and "\ufffd" in odd["content"][0]["text"]
        assert odd["_meta"][META_KEY]["reward_components"]["format"] == -1.0
        send(b"this is not JSON")
        assert lines.reply(None)["error"]["code"] == -32700
        send(call % (4, b"move", b'{"direction":"up"}'))
        moved = lines.reply(4)["result"]
        assert moved["isError"] is False and "You moved up." in moved["content"][0]["text"]
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
