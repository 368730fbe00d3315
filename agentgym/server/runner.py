"""Run the env server: in the foreground (the CLI) or in a background thread."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from agentgym.error import DependencyMissingError, InvalidConfigError
from agentgym.server.admission import (
    HEADER_TIMEOUT_S,
    Admission,
    admitted_protocol,
    connection_cap,
    raise_fd_limit,
)
from agentgym.server.ratelog import ProtocolLog
from agentgym.server.sessions import ServerLimits
from agentgym.server.ws_protocol import bounded_ws_protocol


def _uvicorn() -> Any:
    try:
        import uvicorn
    except ImportError as exc:
        raise DependencyMissingError("uvicorn", "pip install 'agentgym-suite[serve]'") from exc
    return uvicorn


MAX_BACKLOG = 4096
"""Linux's default ``net.core.somaxconn`` since 5.4, which caps what ``listen`` gets anyway."""


def listen_backlog(max_connections: int) -> int:
    """Connections the kernel may hold accepted but not yet taken by the server: room for as
    many as the server admits (at most ``MAX_BACKLOG``), so that thousands of clients that
    connect at once (a trainer starting its rollout workers) are queued, not dropped. A
    dropped handshake costs its client a SYN or ACK retransmission (1, 3, 7, 15, 31 s...),
    which at 4,096 clients ran past a 60 s open timeout when the backlog was 2,048.

    Examples:
        >>> listen_backlog(896), listen_backlog(17_500), listen_backlog(8)
        (896, 4096, 128)
    """
    return max(128, min(MAX_BACKLOG, max_connections))


TOKEN_ENV = "AGENTGYM_SERVE_TOKEN"
"""The environment variable ``agentgym serve`` reads its token from when none is given."""


@dataclass
class ServeConfig:
    """What ``agentgym serve`` runs; its flags, defaults and help are these fields."""

    env_id: str
    """A registered id, e.g. ``agentgym/Sokoban-Tiny-v0``."""
    host: str = "127.0.0.1"
    """Address to bind; set a ``token`` before binding anything but loopback."""
    port: int = 8000
    """TCP port to listen on."""
    token: str | None = None
    """Require ``Authorization: Bearer TOKEN`` (or ``?token=``). None: the value of
    $AGENTGYM_SERVE_TOKEN, when set."""
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments for ``gym.make``."""
    limits: ServerLimits = field(default_factory=ServerLimits)
    """What the process allows: sessions, sizes and deadlines."""
    max_connections: int | None = None
    """Open connections allowed. None: the fd limit less an eighth, at least 64 fds kept
    free; past it the connection idle longest without a request is closed."""
    header_timeout_s: float = HEADER_TIMEOUT_S
    """Seconds a new connection has to send its request head."""

    def resolved_token(self) -> str | None:
        """``token``, else ``$AGENTGYM_SERVE_TOKEN`` (None when neither is set)."""
        return self.token or os.environ.get(TOKEN_ENV) or None


def _server(
    app: Any,
    host: str,
    port: int,
    max_ws_bytes: int,
    max_connections: int | None,
    header_timeout_s: float,
) -> Any:
    """A uvicorn server for ``app`` with :mod:`admission control <agentgym.server.admission>`.

    ``max_connections`` defaults to :func:`~agentgym.server.admission.connection_cap` of the
    process's fd limit. WebSocket connections use :mod:`agentgym.server.ws_protocol` (bounded
    write buffers), and uvicorn's protocol messages go through one rate-limited
    :class:`~agentgym.server.ratelog.ProtocolLog`. WebSocket compression is off: per-message deflate costs a zlib context
    (hundreds of KB) per connection and CPU per message, for observations of a few KB. The
    event loop is uvicorn's ``loop="auto"``: uvloop where installed (the ``serve`` extra
    installs it off Windows), whose C transports cut the loop's own cost per message.
    """
    uvicorn = _uvicorn()
    cap = max_connections or connection_cap()
    protocol_log = ProtocolLog(logging.getLogger("uvicorn.error"))
    admission = Admission(cap, header_timeout_s)
    app.state.admission = admission
    app.state.protocol_log = protocol_log
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        ws_max_size=max_ws_bytes,
        ws_per_message_deflate=False,
        lifespan="on",
        http=admitted_protocol(admission, protocol_log),
        ws=bounded_ws_protocol(protocol_log),
        backlog=listen_backlog(cap),
        timeout_keep_alive=5,
        h11_max_incomplete_event_size=64 * 1024,  # request heads; bodies are bounded apart
    )

    class AdmittedServer(uvicorn.Server):  # type: ignore[misc,name-defined]
        async def serve(self, sockets: Any = None) -> None:
            asyncio.get_running_loop().set_exception_handler(admission.loop_exception_handler)
            await super().serve(sockets)

    return AdmittedServer(config)


def serve(
    app: Any,
    host: str = "127.0.0.1",
    port: int = 8000,
    max_ws_bytes: int = 1 << 20,
    max_connections: int | None = None,
    header_timeout_s: float = HEADER_TIMEOUT_S,
) -> None:
    """Serve ``app`` until interrupted (raising the soft fd limit to the hard one first).

    ``max_connections`` and ``header_timeout_s``: see :mod:`agentgym.server.admission`.
    """
    raise_fd_limit()
    _server(app, host, port, max_ws_bytes, max_connections, header_timeout_s).run()


class ServerThread:
    """``app`` served from a daemon thread on ``host``; ``port=0`` picks a free port.

    Examples:
        >>> from agentgym.server import create_app
        >>> with ServerThread(create_app("agentgym/Sokoban-Tiny-v0")) as srv:  # doctest: +SKIP
        ...     print(srv.url)
    """

    def __init__(
        self,
        app: Any,
        host: str = "127.0.0.1",
        port: int = 0,
        max_ws_bytes: int = 1 << 20,
        max_connections: int | None = None,
        header_timeout_s: float = HEADER_TIMEOUT_S,
    ):
        self.server = _server(app, host, port, max_ws_bytes, max_connections, header_timeout_s)
        self.server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
        self.host = host
        self._thread = threading.Thread(target=self.server.run, daemon=True, name="agentgym-serve")
        self.port = port

    def start(self, timeout_s: float = 20.0) -> ServerThread:
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise InvalidConfigError(
                    f"the env server did not start on {self.host}:{self.port} "
                    f"within {timeout_s} s (port taken?)"
                )
            time.sleep(0.02)
        sock = self.server.servers[0].sockets[0]
        self.port = sock.getsockname()[1]
        return self

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self._thread.join(timeout=10)

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
