"""Run the env server: in the foreground (the CLI) or in a background thread."""

from __future__ import annotations

import threading
import time
from typing import Any

from agentgym.error import DependencyMissingError, InvalidConfigError


def _uvicorn() -> Any:
    try:
        import uvicorn
    except ImportError as exc:
        raise DependencyMissingError("uvicorn", "pip install 'agentgym[serve]'") from exc
    return uvicorn


def _config(app: Any, host: str, port: int, max_ws_bytes: int) -> Any:
    uvicorn = _uvicorn()
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        ws_max_size=max_ws_bytes,
        lifespan="on",
    )


def serve(app: Any, host: str = "127.0.0.1", port: int = 8000, max_ws_bytes: int = 1 << 20) -> None:
    """Serve ``app`` until interrupted."""
    uvicorn = _uvicorn()
    uvicorn.Server(_config(app, host, port, max_ws_bytes)).run()


class ServerThread:
    """``app`` served from a daemon thread on ``host``; ``port=0`` picks a free port.

    Examples:
        >>> from agentgym.server import create_app
        >>> with ServerThread(create_app("agentgym/Sokoban-Tiny-v0")) as srv:  # doctest: +SKIP
        ...     print(srv.url)
    """

    def __init__(
        self, app: Any, host: str = "127.0.0.1", port: int = 0, max_ws_bytes: int = 1 << 20
    ):
        uvicorn = _uvicorn()
        self.server = uvicorn.Server(_config(app, host, port, max_ws_bytes))
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
