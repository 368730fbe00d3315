"""The site server's connections send small writes at once (no Nagle's algorithm).

uvicorn writes a response's head and body separately; with Nagle on, the body waited for the
client's delayed ACK (about 40 ms per page). Asyncio turns Nagle off only on sockets whose
protocol number says TCP, so the server's listening socket must be made with IPPROTO_TCP.
"""

from __future__ import annotations

import http.client
import socket

import pytest

pytestmark = pytest.mark.browser


def test_accepted_connections_have_tcp_nodelay(runtime):
    from agentgym.simulators.browser.sites.todo import TodoSite

    site = TodoSite()
    site.reset(0, {})
    slot = runtime.open_slot(site)
    port = runtime.server.port
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        # keep-alive: the connection stays open, so the server still holds it below
        conn.request("GET", "/", headers={"Host": f"s{slot.id}.localhost:{port}"})
        response = conn.getresponse()
        assert response.status == 200 and b"New item" in response.read()

        async def options() -> list[tuple[int, int]]:
            state = runtime.server._server.server_state
            return [
                (
                    proto.transport.get_extra_info("socket").proto,
                    proto.transport.get_extra_info("socket").getsockopt(
                        socket.IPPROTO_TCP, socket.TCP_NODELAY
                    ),
                )
                for proto in state.connections
                if proto.transport is not None and not proto.transport.is_closing()
            ]

        found = runtime.call(options(), 10)
        assert found, "the open connection is the server's"
        assert all(proto == socket.IPPROTO_TCP and nodelay for proto, nodelay in found), found
    finally:
        conn.close()
        runtime.close_slot(slot)
