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
import os
import sys

from agentgym.cli.args import json_object


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve",
        help="serve an env over OpenEnv's HTTP/WebSocket protocol",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("env_id", metavar="ID", help="a registered id, e.g. agentgym/Sokoban-Tiny-v0")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="TCP port to listen on")
    p.add_argument(
        "--token",
        default=os.environ.get("AGENTGYM_SERVE_TOKEN"),
        help="require 'Authorization: Bearer TOKEN' (or ?token=); default $AGENTGYM_SERVE_TOKEN",
    )
    p.add_argument("--max-sessions", type=int, default=64, help="concurrent sessions (envs)")
    p.add_argument("--session-timeout", type=float, default=600.0, help="idle seconds per session")
    p.add_argument("--step-timeout", type=float, default=60.0, help="seconds per reset/step")
    p.add_argument("--max-body-bytes", type=int, default=1 << 20, help="largest request/message")
    p.add_argument("--max-action-chars", type=int, default=256 * 1024, help="largest action")
    p.add_argument(
        "--max-json-depth", type=int, default=64, help="deepest nesting of objects/arrays"
    )
    p.add_argument(
        "--step-workers",
        type=int,
        default=None,
        help="env calls run at once (default: one per session, so slow sessions never "
        "hold up others; set lower to bound threads, then the least-served session goes first)",
    )
    p.add_argument(
        "--max-connections",
        type=int,
        default=None,
        help="open connections allowed (default: the fd limit less an eighth, at least 64 "
        "fds kept free); past it the connection idle longest without a request is closed",
    )
    p.add_argument(
        "--header-timeout",
        type=float,
        default=60.0,
        help="seconds a new connection has to send its request head",
    )
    p.add_argument("--body-timeout", type=float, default=30.0, help="seconds an HTTP body may take")
    p.add_argument("--env-kwargs", default="{}", help="JSON keyword arguments for gym.make")
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
    from agentgym.server import ServerLimits, create_app, serve

    record = get_record(args.env_id)
    env_kwargs = json_object(args.env_kwargs)
    if not _is_loopback(args.host) and not args.token:
        print(
            f"agentgym serve: warning: binding {args.host} without --token lets anyone who can "
            "reach this port run episodes",
            file=sys.stderr,
        )
    limits = ServerLimits(
        max_sessions=args.max_sessions,
        max_body_bytes=args.max_body_bytes,
        max_action_chars=args.max_action_chars,
        session_timeout_s=args.session_timeout,
        step_timeout_s=args.step_timeout,
        max_json_depth=args.max_json_depth,
        step_workers=args.step_workers,
        body_timeout_s=args.body_timeout,
    )
    logging.basicConfig(  # the command line shows the server's warnings with a timestamp
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(message)s"
    )
    app = create_app(record.id, env_kwargs=env_kwargs, token=args.token, limits=limits)
    print(f"agentgym serve: {record.id} on http://{args.host}:{args.port} (WebSocket /ws)")
    serve(
        app,
        args.host,
        args.port,
        max_ws_bytes=args.max_body_bytes,
        max_connections=args.max_connections,
        header_timeout_s=args.header_timeout,
    )
    return 0
