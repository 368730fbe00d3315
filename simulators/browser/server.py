"""The local site server: one uvicorn/starlette app on 127.0.0.1, many slots.

Each env slot gets its own :class:`~agentgym.simulators.browser.site.Site` and its own
origin, ``http://s<slot>.localhost:<port>`` (Chromium resolves ``*.localhost`` to the
loopback address itself), so cookies and storage of different slots never mix. The port is
chosen free by the OS. The server runs as a task on the browser runtime's event loop; it can
also be started alone with :meth:`SiteServer.start` on any loop.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import socket
from importlib import resources
from typing import Any
from urllib.parse import parse_qs

from agentgym.simulators.browser.site import STATIC_PREFIX, Request, Site, not_found
from starlette.applications import Starlette
from starlette.requests import Request as HttpRequest
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

logger = logging.getLogger(__name__)

_HOST = re.compile(r"^s(\d+)\.localhost(?::\d+)?$")
_STATIC_TYPES = {".css": "text/css", ".js": "text/javascript", ".png": "image/png"}
_NO_STORE = {"cache-control": "no-store"}


def static_text(name: str) -> str:
    """A file shipped in ``simulators/browser/static``."""
    return resources.files("agentgym.simulators.browser").joinpath("static", name).read_text()


class SiteServer:
    """Serve many :class:`Site` objects, one per slot, from one port."""

    def __init__(self) -> None:
        self.sites: dict[int, Site] = {}
        self.port: int | None = None
        self._server: Any = None
        self._task: asyncio.Task[Any] | None = None
        self._static: dict[str, str] = {}
        self.app = Starlette(
            routes=[Route("/{path:path}", self._endpoint, methods=["GET", "POST"])]
        )

    def origin(self, slot: int) -> str:
        """The origin a slot's pages live on."""
        if self.port is None:
            raise RuntimeError("the site server is not started")
        return f"http://s{slot}.localhost:{self.port}"

    async def start(self, timeout: float = 15.0) -> None:
        """Bind a free port on 127.0.0.1 and serve until :meth:`stop`."""
        import uvicorn

        # IPPROTO_TCP named explicitly: asyncio turns Nagle's algorithm off only on sockets
        # whose protocol number says TCP, and a socket made with proto 0 (and every
        # connection it accepts) would keep it on. uvicorn writes a response's head and
        # body separately, so with Nagle on the body waited for the client's delayed ACK:
        # about 40 ms of idle time on every page with a body.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.app, log_level="warning", access_log=False, lifespan="off", ws="none"
        )
        self._server = uvicorn.Server(config)
        self._task = asyncio.get_running_loop().create_task(self._server.serve(sockets=[sock]))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not self._server.started:  # wait for the condition, not a fixed time
            if self._task.done():
                raise RuntimeError(f"site server failed to start: {self._task.exception()!r}")
            if loop.time() > deadline:
                raise TimeoutError("site server did not start in time")
            await asyncio.sleep(0.005)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._task is not None:
            try:
                await asyncio.wait_for(self._task, 5.0)
            except (TimeoutError, asyncio.CancelledError, Exception):
                self._task.cancel()
        self._server = self._task = None

    async def _endpoint(self, http: HttpRequest) -> Response:
        path = "/" + http.path_params.get("path", "")
        if path.startswith(STATIC_PREFIX):
            name = path[len(STATIC_PREFIX) :]
            if name not in self._static:
                try:
                    self._static[name] = static_text(name) if "/" not in name else ""
                except (FileNotFoundError, OSError):
                    self._static[name] = ""
            body = self._static[name]
            if not body:
                return Response("not found", status_code=404)
            suffix = name[name.rfind(".") :]
            return Response(
                body,
                media_type=_STATIC_TYPES.get(suffix, "text/plain"),
                headers={"cache-control": "max-age=3600"},
            )
        match = _HOST.match(http.headers.get("host", ""))
        site = self.sites.get(int(match.group(1))) if match else None
        if site is None:
            resp = not_found(path)
            return HTMLResponse(resp.html or "", status_code=404, headers=_NO_STORE)
        raw = await http.body()
        form: dict[str, list[str]] = {}
        payload: Any = None
        ctype = http.headers.get("content-type", "")
        if raw and "json" in ctype:
            try:
                payload = json.loads(raw)
            except ValueError:
                payload = None
        elif raw:
            form = parse_qs(raw.decode("utf-8", "replace"), keep_blank_values=True)
        query = parse_qs(http.url.query, keep_blank_values=True)
        request = Request(http.method, path, query, form, payload)
        resp = site.serve(request)
        if resp.redirect is not None:
            return RedirectResponse(resp.redirect, status_code=303, headers=_NO_STORE)
        if resp.json is not None:
            return JSONResponse(resp.json, status_code=resp.status, headers=_NO_STORE)
        return HTMLResponse(resp.html or "", status_code=resp.status, headers=_NO_STORE)
