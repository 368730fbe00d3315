"""MCP: serve an env's tools over the Model Context Protocol (the official ``mcp`` SDK).

Every peer framework (OpenEnv, verifiers, NeMo Gym, rLLM, GEM) can drive tools behind an MCP
server, and so can MCP hosts and agent SDKs. :func:`build_server` turns any registered
single-agent id into such a server, as a thin adapter over the suite's text-session core
(:class:`~agentgym.integrations.session.TextSession`):

* **One env per MCP session.** Each MCP session (one stdio connection, one streamable-HTTP
  ``Mcp-Session-Id``) gets its own env, built at its first ``reset`` and closed when the
  session ends (client DELETE, idle timeout, disconnect). Two clients never share an env.
  Over HTTP the session limit counts envs, so bare ``initialize`` requests cannot lock
  clients out (:mod:`agentgym.integrations.mcp_transport`); a failed ``reset`` leaves the
  session usable.
* **Tools.** The env's tools, with their JSON schemas as ``inputSchema``, plus ``reset``
  (optional ``seed`` and ``task_id``; it returns the system prompt and the task). Envs that
  end with an ``<answer>`` get an ``answer`` tool, as in the TRL adapter, since an MCP client
  only ever sends tool calls; every text such an env returns asks for that tool instead of
  ``<answer>`` text the host would never send (``tool_only_messages``). Calling a tool is
  one env step with that tool call.
* **Results.** The observation is the tool result: text content, and images as PNG image
  content (base64). A call the env rejects (unknown tool, bad arguments) comes back with
  ``isError`` and the env's explanation, and costs what the env charges for it (the
  ``format`` penalty), exactly as in text mode.
* **Reward stays out of the model's view.** Reward, ``reward_components``, ``terminated``,
  ``truncated``, ``success`` and the step ``info`` travel in the result's ``_meta`` under
  ``"agentgym"``: MCP hosts pass content (and structured content) to the model, ``_meta``
  only to the client program, which is where an RL harness reads it.

Sessions need the ``initialize`` handshake (protocol revisions up to 2025-11-25). The
stateless 2026-07-28 revision has no session to hang an env on, so this server declines the
``server/discover`` probe and clients in ``mode="auto"`` (the default of ``mcp.Client``) fall
back to the handshake; a client pinned to 2026-07-28 can list the tools but every call
answers with an error saying so.

Example (in-process, streamable HTTP)::

    from agentgym.integrations.mcp import build_server, serve_http
    serve_http(build_server("agentgym/Sokoban-Tiny-v0"), port=8765)   # blocks

or on the command line: ``agentgym mcp agentgym/Sokoban-Tiny-v0`` (stdio) and
``agentgym mcp agentgym/Sokoban-Tiny-v0 --transport http --port 8765``. See docs/mcp.md.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread

from agentgym.error import InvalidConfigError
from agentgym.integrations.session import SessionTurn, TextSession, tool_only_messages
from agentgym.text import safe_text

__all__ = [
    "META_KEY",
    "RESET_TOOL",
    "build_server",
    "http_app",
    "serve_http",
    "serve_stdio",
    "serve_stdio_async",
]

logger = logging.getLogger(__name__)

RESET_TOOL = "reset"
"""The name of the tool that starts (or restarts) the session's episode."""

META_KEY = "agentgym"
"""The key in a tool result's ``_meta`` that holds reward, flags and info."""

_RESET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "seed": {
            "type": "integer",
            "description": "Picks the task and world; the same seed gives the same episode.",
        },
        "task_id": {
            "type": "string",
            "description": "Picks the task by id (overrides the seed's choice of task).",
        },
    },
    "additionalProperties": False,
}
_STATE_KEY = "agentgym.mcp"
_HANDLERS: weakref.WeakKeyDictionary[Any, _EnvTools] = weakref.WeakKeyDictionary()
"""The handlers behind each server :func:`build_server` made (for :func:`http_app`)."""
_DATA_URL_PNG = "data:image/png;base64,"


@dataclass
class _Episode:
    """One MCP session's env: its text session (built at the first reset) and a lock.

    The lock serializes calls within a session (MCP lets a client send requests
    concurrently); different sessions never share it, so they step in parallel.
    """

    session: TextSession | None = None
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    needs_reset: bool = True
    session_id: str | None = None  # the MCP session's id (None over stdio)


def _connection(ctx: Any) -> Any:
    """The SDK's per-connection object for a request (one per MCP session).

    ``Connection.state`` and ``Connection.exit_stack`` are the SDK's documented homes for
    per-connection state and teardown; mcp 2.3 hands low-level handlers only the
    per-request ``ServerSession``, which holds the connection.
    """
    connection = getattr(ctx.session, "_connection", None)
    if connection is None or not hasattr(connection, "state"):
        raise RuntimeError(
            "this mcp SDK version does not expose the connection to handlers; "
            "agentgym's MCP server needs mcp>=2.3,<3"
        )
    return connection


def _wire(obj: Any) -> Any:
    """``obj`` as JSON-safe values whose strings are valid UTF-8 (no lone surrogates)."""
    from agentgym.server.payloads import jsonable

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            return safe_text(value)
        if isinstance(value, dict):
            return {safe_text(k): clean(v) for k, v in value.items()}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    return clean(jsonable(obj))


def _content(messages: list[dict[str, Any]]) -> list[Any]:
    """Chat messages (content as text or OpenAI parts) as MCP text and PNG image content."""
    import mcp_types as types

    out: list[Any] = []
    for message in messages:
        content = message.get("content")
        parts: list[dict[str, Any]] = (
            content if isinstance(content, list) else [{"type": "text", "text": content}]
        )
        for part in parts:
            if part.get("type") == "image_url":
                url = str(part["image_url"]["url"])
                if url.startswith(_DATA_URL_PNG):
                    data = url[len(_DATA_URL_PNG) :]
                    out.append(types.ImageContent(type="image", data=data, mime_type="image/png"))
            elif part.get("text"):
                out.append(types.TextContent(type="text", text=safe_text(str(part["text"]))))
    return out


def _error(text: str) -> Any:
    import mcp_types as types

    return types.CallToolResult(
        content=[types.TextContent(type="text", text=safe_text(text))], is_error=True
    )


def _mcp_tool(tool: Mapping[str, Any]) -> Any:
    """One OpenAI function-calling schema as an MCP tool."""
    import mcp_types as types

    fn = tool.get("function", tool)
    schema = dict(fn.get("parameters") or {})
    schema.setdefault("type", "object")
    return types.Tool(name=fn["name"], description=fn.get("description"), input_schema=schema)


def _reset_args(arguments: Mapping[str, Any]) -> tuple[int | None, str | None, str | None]:
    """``(seed, task_id, error)`` from the reset tool's arguments."""
    unknown = sorted(set(arguments) - {"seed", "task_id"})
    if unknown:
        return None, None, f"reset takes 'seed' and 'task_id'; got unknown argument(s) {unknown}."
    seed = arguments.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        return None, None, f"reset's 'seed' must be a non-negative integer, got {seed!r}."
    task_id = arguments.get("task_id")
    if task_id is not None and not isinstance(task_id, str):
        return None, None, f"reset's 'task_id' must be a string, got {task_id!r}."
    return seed, task_id or None, None


def _step_meta(turn: SessionTurn) -> dict[str, Any]:
    info = turn.info
    return {
        "reward": turn.reward,
        "reward_components": dict(info.get("reward_components", {})),
        "terminated": turn.terminated,
        "truncated": turn.truncated,
        "success": bool(info["success"]) if "success" in info else None,
        "action_valid": bool(info.get("action_valid", True)),
        "info": info,
    }


class _EnvTools:
    """The handlers of one MCP server over one env id (see the module docstring)."""

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any] | None, answer_tool: bool | None):
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs or {})
        self.answer_tool = answer_tool
        self.max_envs: int | None = None  # set by http_app: envs (sessions that reset) at once
        self.live_envs = 0  # envs built or being built, not yet closed
        self.env_sessions: set[str] = set()  # ids of the MCP sessions that hold one
        probe = self._new_session()
        try:
            self.tools = list(probe.reset(seed=0).tools)
            # an MCP host sends only tool calls: where the env offers the answer tool, every
            # text asks for it instead of <answer> text the host would never send
            self.tool_only = bool(getattr(probe.env.unwrapped, "answer_tool", False))
        finally:
            probe.close()
        names = [t["function"]["name"] for t in self.tools]
        if RESET_TOOL in names:
            raise InvalidConfigError(
                f"{env_id} declares a tool named {RESET_TOOL!r}, which the MCP server "
                "keeps for starting episodes."
            )

    def _new_session(self) -> TextSession:
        return TextSession(
            self.env_id,
            env_kwargs=self.env_kwargs,
            answer_tool=self.answer_tool,
            image_format="data_url",
            feedback_role="tool",
        )

    async def _episode(self, ctx: Any) -> _Episode:
        connection = _connection(ctx)
        episode = connection.state.get(_STATE_KEY)
        if episode is None:
            sid = getattr(connection, "session_id", None)
            episode = connection.state[_STATE_KEY] = _Episode(session_id=sid)

            async def close() -> None:
                if episode.session is None:
                    return
                try:
                    await anyio.to_thread.run_sync(episode.session.close)
                finally:
                    self._release_env(episode)

            connection.exit_stack.push_async_callback(close)
        return episode

    def holds_env(self, session_id: str) -> bool:
        """Whether the MCP session ``session_id`` holds an env (it has called ``reset``)."""
        return session_id in self.env_sessions

    def _claim_env(self, episode: _Episode) -> str | None:
        """Count one more env for ``episode``; the refusal, when ``max_envs`` are live."""
        if self.max_envs is not None and self.live_envs >= self.max_envs:
            return (
                f"The server holds its maximum of {self.max_envs} envs (one per MCP session "
                f"that has called {RESET_TOOL!r}); try again when a session ends or idles out."
            )
        self.live_envs += 1
        if episode.session_id is not None:
            self.env_sessions.add(episode.session_id)
        return None

    def _release_env(self, episode: _Episode) -> None:
        self.live_envs -= 1
        if episode.session_id is not None:
            self.env_sessions.discard(episode.session_id)

    # ---- MCP handlers -----------------------------------------------------------------------

    async def list_tools(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types

        tools = self.tools
        episode = _connection(ctx).state.get(_STATE_KEY)
        if episode is not None and episode.session is not None and episode.session.tools:
            tools = episode.session.tools
        reset = types.Tool(
            name=RESET_TOOL,
            description=(
                f"Start a new episode of {self.env_id}; returns the rules and the task. "
                "Call it first; calling it again starts over."
            ),
            input_schema=_RESET_SCHEMA,
        )
        return types.ListToolsResult(tools=[reset, *(_mcp_tool(t) for t in tools)])

    async def call_tool(self, ctx: Any, params: Any) -> Any:
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return _error(
                "This server keeps one env per MCP session, and protocol "
                f"{ctx.protocol_version} has no sessions. Connect with the initialize "
                "handshake (mcp.Client(mode='auto' or 'legacy'), or ClientSession.initialize())."
            )
        name = params.name
        arguments = dict(params.arguments or {})
        episode = await self._episode(ctx)
        async with episode.lock:
            if name == RESET_TOOL:
                return await self._reset(episode, arguments)
            return await self._step(episode, ctx.request_id, name, arguments)

    async def discover(self, ctx: Any, params: Any) -> Any:
        """Decline ``server/discover`` so ``mode="auto"`` clients use the handshake."""
        from mcp.shared.exceptions import MCPError
        from mcp_types import METHOD_NOT_FOUND

        raise MCPError(
            code=METHOD_NOT_FOUND,
            message="agentgym's MCP server keeps an env per session: use the initialize handshake",
        )

    # ---- episode calls ----------------------------------------------------------------------

    async def _reset(self, episode: _Episode, arguments: dict[str, Any]) -> Any:
        import mcp_types as types

        seed, task_id, problem = _reset_args(arguments)
        if problem:
            return _error(problem)
        options = {"task_id": task_id} if task_id else None
        if episode.session is None:
            refused = self._claim_env(episode)
            if refused:
                return _error(refused)
            try:
                episode.session = await anyio.to_thread.run_sync(self._new_session)
            except Exception as exc:
                self._release_env(episode)
                logger.warning("%s: building a session env failed: %s", self.env_id, exc)
                return _error(f"reset failed: the env could not be built ({exc})")
        try:
            start = await anyio.to_thread.run_sync(episode.session.reset, seed, options)
        except Exception as exc:  # an unknown task id, a broken simulator: the client is told
            logger.info("%s: reset(seed=%r, task_id=%r) failed", self.env_id, seed, task_id)
            episode.needs_reset = True
            return _error(f"reset failed: {type(exc).__name__}: {exc}")
        episode.needs_reset = False
        info = {k: v for k, v in start.info.items() if k != "tools"}
        meta = {"env_id": self.env_id, "task_id": info.get("task_id"), "info": info}
        messages = tool_only_messages(start.messages) if self.tool_only else start.messages
        return types.CallToolResult(content=_content(messages), _meta={META_KEY: _wire(meta)})

    async def _step(
        self, episode: _Episode, request_id: Any, name: str, arguments: dict[str, Any]
    ) -> Any:
        import mcp_types as types

        session = episode.session
        if session is None or episode.needs_reset:
            return _error(f"No episode is running: call the {RESET_TOOL!r} tool first.")
        if session.done:
            return _error(f"The episode has ended: call {RESET_TOOL!r} to start a new one.")
        call = {
            "id": str(request_id),
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }
        turn_in = {"role": "assistant", "content": "", "tool_calls": [call]}
        try:
            turn = await anyio.to_thread.run_sync(session.step, turn_in)
        except Exception as exc:  # the env broke mid-step: its state is unknown
            logger.exception("%s failed on tool call %r", self.env_id, name)
            episode.needs_reset = True
            return _error(
                f"The environment failed on this call ({type(exc).__name__}: {exc}); "
                f"call {RESET_TOOL!r} to start a new episode."
            )
        meta = _step_meta(turn)
        reply = tool_only_messages(turn.messages) if self.tool_only else turn.messages
        return types.CallToolResult(
            content=_content(reply),
            is_error=not meta["action_valid"],
            _meta={META_KEY: _wire(meta)},
        )


def build_server(
    env_id: str,
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    answer_tool: bool | None = None,
) -> Any:
    """An MCP server (``mcp.server.Server``) that serves ``env_id``'s tools, one env per session.

    Args:
        env_id: A registered single-agent id, e.g. ``"agentgym/Sokoban-Tiny-v0"``.
        env_kwargs: Keyword arguments for ``gym.make`` (``reward_weights``, ...).
        answer_tool: Offer the ``answer`` tool; ``None`` (default) offers it exactly for envs
            that end with an ``<answer>``, which an MCP client could otherwise never send.

    Builds (and closes) one probe env to read the tool schemas; session envs are built at
    each session's first ``reset``. Serve it with :func:`serve_stdio` or :func:`serve_http`
    (or mount :func:`http_app` in your own ASGI server).
    """
    from mcp.server import Server

    from agentgym.registry import get_record

    record = get_record(env_id)
    handlers = _EnvTools(record.id, env_kwargs, answer_tool)
    server: Any = Server(
        f"agentgym {record.id}",
        instructions=(
            f"Tools of the agentgym env {record.id}. Call '{RESET_TOOL}' first: it returns "
            "the rules and the task. Each other tool call is one step of the episode."
            + (" Give the final answer with the 'answer' tool." if handlers.tool_only else "")
        ),
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
    )
    import mcp_types as types

    server.add_request_handler("server/discover", types.RequestParams, handlers.discover)
    _HANDLERS[server] = handlers
    return server


async def serve_stdio_async(server: Any) -> None:
    """Serve ``server`` over this process's stdin/stdout until the client disconnects."""
    from mcp.server.runner import serve_loop
    from mcp.server.stdio import stdio_server

    from agentgym.integrations.mcp_transport import RepairedReads

    async with server.lifespan(server) as state, stdio_server() as (read, write):
        await serve_loop(server, RepairedReads(read, write), write, lifespan_state=state)


def serve_stdio(server: Any) -> None:
    """Blocking :func:`serve_stdio_async` (what ``agentgym mcp ID`` runs)."""
    anyio.run(serve_stdio_async, server)


def http_app(
    server: Any,
    *,
    host: str = "127.0.0.1",
    path: str = "/mcp",
    max_sessions: int | None = 64,
    session_idle_timeout: float | None = 600.0,
) -> Any:
    """The streamable-HTTP ASGI app (Starlette) for ``server``.

    Args:
        server: From :func:`build_server`.
        host: The address it will be served on; loopback hosts turn on the SDK's DNS
            rebinding protection (only local Host/Origin headers are accepted).
        path: The MCP endpoint.
        max_sessions: Sessions that hold an env (have called ``reset``) at once; the reset
            that would build one more answers with a tool error. Sessions without an env are
            admitted beyond it, up to ``max_sessions + max(64, max_sessions)`` in all, the
            least recently used idle one making room for a newcomer; past that (every one
            busy) HTTP 503. ``None``: no limit. See :mod:`agentgym.integrations.mcp_transport`.
        session_idle_timeout: Seconds without a request after which a session and its env
            are closed; ``None`` keeps them until the client ends them.
    """
    from agentgym.integrations.mcp_transport import env_session_app

    handlers = _HANDLERS.get(server)
    if handlers is not None:
        handlers.max_envs = max_sessions
    return env_session_app(
        server,
        path=path,
        host=host,
        max_envs=max_sessions,
        session_idle_timeout=session_idle_timeout,
        holds_env=handlers.holds_env if handlers is not None else lambda sid: False,
    )


def serve_http(
    server: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
    max_sessions: int | None = 64,
    session_idle_timeout: float | None = 600.0,
) -> None:
    """Serve :func:`http_app` with uvicorn on ``http://host:port/path`` (blocks).

    To serve from a background thread instead (tests, notebooks), pass :func:`http_app`'s
    app to ``agentgym.server.ServerThread``.
    """
    from agentgym.server.runner import serve

    app = http_app(
        server,
        host=host,
        path=path,
        max_sessions=max_sessions,
        session_idle_timeout=session_idle_timeout,
    )
    serve(app, host, port)
