"""Sites: small web applications written as plain Python request handlers.

A :class:`Site` answers :class:`Request` objects with :class:`Response` objects and keeps its
state in Python, so the same site can be served to Chromium by
:class:`~agentgym.simulators.browser.server.SiteServer` or driven with no browser at all by
:class:`~agentgym.simulators.browser.dom.TextBrowser`. Every site is reset deterministically
from a task seed and can dump and load its whole state (for snapshots and state keys).
"""

from __future__ import annotations

import copy
import html
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

STATIC_PREFIX = "/__static/"
#: Include at the end of a page whose POST forms should submit with fetch and swap the body
#: in place of a full page load (``static/swap.js``); what the page shows is unchanged.
SWAP_FORMS_SCRIPT = f"<script src='{STATIC_PREFIX}swap.js'></script>"


@dataclass
class Request:
    """One HTTP request as a site sees it."""

    method: str
    path: str
    query: dict[str, list[str]] = field(default_factory=dict)
    form: dict[str, list[str]] = field(default_factory=dict)
    json: Any = None

    @classmethod
    def from_url(cls, method: str, url: str, **kw: Any) -> Request:
        """Build a request from a path with an optional query string."""
        parts = urlsplit(url)
        return cls(method, parts.path or "/", parse_qs(parts.query, keep_blank_values=True), **kw)

    def arg(self, name: str, default: str = "") -> str:
        """First value of a query or form field."""
        values = self.form.get(name) or self.query.get(name)
        return values[0] if values else default


@dataclass
class Response:
    """An HTML page, a redirect (``redirect`` set, status 303) or a JSON body."""

    html: str | None = None
    status: int = 200
    redirect: str | None = None
    json: Any = None


def esc(text: Any) -> str:
    """HTML-escape any value."""
    return html.escape(str(text), quote=True)


def page(title: str, body: str, *, header: str = "", scripts: str = "") -> str:
    """A complete HTML document in the house style (shared stylesheet and page helper)."""
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{esc(title)}</title>"
        f"<link rel='stylesheet' href='{STATIC_PREFIX}site.css'>"
        f"<script src='{STATIC_PREFIX}agent.js'></script>"
        f"</head><body>{header}{body}{scripts}</body></html>"
    )


class Site:
    """Base class: a deterministic web application with a dumpable state.

    Subclasses implement :meth:`reset`, :meth:`handle`, :meth:`dump` and :meth:`load`.
    ``handle`` runs on the server's thread while the env reads state on its own, so both go
    through :meth:`serve` and :meth:`snapshot_state`, which hold the site's lock.
    """

    #: Path the browser opens at reset.
    start_path: str = "/"

    def __init__(self) -> None:
        self.lock = threading.RLock()

    def reset(self, seed: int, task: Mapping[str, Any]) -> None:
        raise NotImplementedError

    def handle(self, request: Request) -> Response:
        raise NotImplementedError

    def dump(self) -> Any:
        """The site's whole state as plain JSON-able data."""
        raise NotImplementedError

    def load(self, state: Any) -> None:
        raise NotImplementedError

    def serve(self, request: Request) -> Response:
        """Handle one request under the site's lock; never raises (500 page instead)."""
        with self.lock:
            try:
                return self.handle(request)
            except Exception as exc:  # a site bug must not kill the server
                return Response(
                    page("Error", f"<h1>Server error</h1><p>{esc(type(exc).__name__)}</p>"),
                    status=500,
                )

    def snapshot_state(self) -> Any:
        """A deep copy of :meth:`dump` taken under the lock."""
        with self.lock:
            return copy.deepcopy(self.dump())

    def restore_state(self, state: Any) -> None:
        with self.lock:
            self.load(copy.deepcopy(state))

    def state_digest(self) -> str:
        """Canonical JSON of the state (for state keys); no copy needed, as it is only read."""
        with self.lock:
            return json.dumps(self.dump(), sort_keys=True, separators=(",", ":"))


def not_found(path: str) -> Response:
    return Response(
        page("Not found", f"<h1>Not found</h1><p>No page at {esc(path)}.</p><a href='/'>Home</a>"),
        status=404,
    )
