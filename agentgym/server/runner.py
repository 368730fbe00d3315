"""Run the env server: in the foreground (the CLI) or in a background thread."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from agentgym.error import DependencyMissingError, InvalidConfigError
from agentgym.server.admission import (
    HEADER_TIMEOUT_S,
    Admission,
    admitted_protocol,
    connection_cap,
    raise_fd_limit,
)


def _uvicorn() -> Any:
    try:
        import uvicorn
    except ImportError as exc:
        raise DependencyMissingError("uvicorn", "pip install 'agentgym[serve]'") from exc
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
    process's fd limit. WebSocket compression is off: per-message deflate costs a zlib context
    (hundreds of KB) per connection and CPU per message, for observations of a few KB. The
    event loop is uvicorn's ``loop="auto"``: uvloop where installed (the ``serve`` extra
    installs it off Windows), whose C transports cut the loop's own cost per message.
    """
    uvicorn = _uvicorn()
    cap = max_connections or connection_cap()
    admission = Admission(cap, header_timeout_s)
    app.state.admission = admission
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        ws_max_size=max_ws_bytes,
        ws_per_message_deflate=False,
        lifespan="on",
        http=admitted_protocol(admission),
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
