"""uvicorn's WebSocket protocol with bounded write buffers and rate-limited protocol logs.

uvicorn answers every ping frame with a pong written straight to the transport, with no
regard for whether the client reads: a client that sends pings and never reads grew the
server's memory by about 9 MB/s, without bound (the app's own replies wait for the buffer to
drain; pongs did not). Rules here:

* When the transport's write buffer passes its high-water mark (the client stopped reading),
  the server stops reading from that client until the buffer drains below the low-water mark.
  A paused reader's pings stay in the kernel's socket buffers, so what the server holds for
  one connection is bounded by the high-water mark plus one read. The reading the protocol
  pauses for its own reasons (a message the app has not taken yet) is kept apart: neither
  side's resume undoes the other's pause.
* A client that never reads never answers the server's keepalive pings either: at the
  keepalive deadline the connection is closed with code 1011 ("keepalive ping timeout"), and
  when the close cannot even be written (the buffer is still full) the connection is aborted
  instead of waiting forever for a drain, and the server logs one line saying why.
* Protocol errors (invalid UTF-8 in a text frame, closed with code 1007) are logged through a
  shared :class:`~agentgym.server.ratelog.ProtocolLog`: one line each, at most one per kind
  every 10 s, never a traceback.
"""

from __future__ import annotations

import logging
from typing import Any

from agentgym.server.ratelog import ProtocolLog

logger = logging.getLogger(__name__)


def bounded_ws_protocol(log: ProtocolLog) -> type | str:
    """uvicorn's sans-I/O WebSocket protocol class with the rules above, logging to ``log``
    (``"auto"``, uvicorn's own choice, where uvicorn is too old to have that protocol)."""
    try:
        from uvicorn.protocols.websockets.websockets_sansio_impl import (
            WebSocketsSansIOProtocol,
        )
    except ImportError:  # uvicorn < 0.35: no bounds beyond its own
        return "auto"

    class BoundedWebSocketProtocol(WebSocketsSansIOProtocol):
        def __init__(self, *args: Any, **kwargs: Any):
            super().__init__(*args, **kwargs)
            self.logger = log  # type: ignore[assignment]
            self.write_held = False  # reading paused because the client does not read

        def pause_writing(self) -> None:
            super().pause_writing()
            self.write_held = True
            self.transport.pause_reading()

        def resume_writing(self) -> None:
            super().resume_writing()
            self.write_held = False
            if not self.read_paused and not self.transport.is_closing():
                self.transport.resume_reading()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.write_held and not self.transport.is_closing():
                self.transport.pause_reading()  # whatever resumed reading meanwhile

        async def receive(self) -> Any:
            message = await self.queue.get()
            if self.read_paused and self.queue.empty():
                self.read_paused = False
                if not self.write_held:
                    self.transport.resume_reading()
            return message

        def keepalive_timeout(self) -> None:
            super().keepalive_timeout()
            if self.write_held and not self.disconnected:
                log.warning(
                    "agentgym serve: closed a WebSocket connection whose client stopped "
                    "reading (its replies filled the write buffer; no keepalive pong)"
                )
                self.transport.abort()

    return BoundedWebSocketProtocol
