"""``agentgym serve ID``: run an env as a server that speaks OpenEnv's wire protocol.

HTTP ``/reset /step /state /schema /health /metadata`` and WebSocket sessions on ``/ws``
(one env per connection, many connections per process). Binds to 127.0.0.1 unless told
otherwise; give ``--token`` (or set AGENTGYM_SERVE_TOKEN) before binding anywhere else.

HTTP requests without ``episode_id`` share one default session (they are told so by the
``X-Agentgym-Shared-Session`` and ``Warning`` headers, and the server logs it); WebSocket
clients always get their own.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import sys
from typing import TYPE_CHECKING

from agentgym.cli.from_config import ConfigFlags, Flag, add_deferred

if TYPE_CHECKING:
    from agentgym.server.runner import ServeConfig

#: The flags' names: those of earlier versions (``--session-timeout`` for the seconds).
FLAGS = {
    "env_id": Flag(metavar="ID"),
    "token": Flag(metavar="TOKEN"),
    "limits.max_sessions": Flag("--max-sessions"),
    "limits.max_body_bytes": Flag("--max-body-bytes"),
    "limits.max_action_chars": Flag("--max-action-chars"),
    "limits.max_json_depth": Flag("--max-json-depth"),
    "limits.session_timeout_s": Flag("--session-timeout"),
    "limits.step_timeout_s": Flag("--step-timeout"),
    "limits.step_workers": Flag("--step-workers"),
    "limits.body_timeout_s": Flag("--body-timeout"),
    "header_timeout_s": Flag("--header-timeout"),
}


def config_flags() -> ConfigFlags[ServeConfig]:
    """The flags of :class:`~agentgym.server.runner.ServeConfig` (the one source of
    defaults)."""
    from agentgym.server.runner import ServeConfig

    return ConfigFlags(ServeConfig, FLAGS)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve",
        help="serve an env over OpenEnv's HTTP/WebSocket protocol",
        description=__doc__,
        usage="%(prog)s ID [--host HOST] [--port PORT] [--token TOKEN] [OPTIONS]",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_deferred(p, config_flags, "serve")
    p.set_defaults(func=run)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run(args: argparse.Namespace) -> int:
    from agentgym.registry import get_record
    from agentgym.server import create_app, serve

    cfg = config_flags().config(args)
    record = get_record(cfg.env_id)
    token = cfg.resolved_token()
    if not _is_loopback(cfg.host) and not token:
        print(
            f"agentgym serve: warning: binding {cfg.host} without --token lets anyone who can "
            "reach this port run episodes",
            file=sys.stderr,
        )
    logging.basicConfig(  # the command line shows the server's warnings with a timestamp
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(message)s"
    )
    app = create_app(record.id, env_kwargs=cfg.env_kwargs, token=token, limits=cfg.limits)
    print(f"agentgym serve: {record.id} on http://{cfg.host}:{cfg.port} (WebSocket /ws)")
    serve(
        app,
        cfg.host,
        cfg.port,
        max_ws_bytes=cfg.limits.max_body_bytes,
        max_connections=cfg.max_connections,
        header_timeout_s=cfg.header_timeout_s,
    )
    return 0
