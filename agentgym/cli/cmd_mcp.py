"""``agentgym mcp ID``: serve an env's tools over the Model Context Protocol.

One env per MCP session; ``reset`` (optional seed / task_id) starts an episode and returns
the task, every other tool call is one env step whose result is the observation (images as
PNG image content), with reward and info in the result's ``_meta["agentgym"]``.

Transports: ``stdio`` (default; what MCP hosts launch as a subprocess) and streamable
``http`` on ``http://HOST:PORT/mcp`` (127.0.0.1 unless told otherwise). See docs/mcp.md.
"""

from __future__ import annotations

import argparse
import logging
import sys

from agentgym.cli.args import check_env_args, json_object


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "mcp",
        help="serve an env's tools over MCP (stdio or streamable HTTP)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("env_id", metavar="ID", help="a registered id, e.g. agentgym/Sokoban-Tiny-v0")
    p.add_argument(
        "--transport",
        choices=("stdio", "http"),
        default="stdio",
        help="stdio (an MCP host starts the server) or streamable HTTP (many clients share it)",
    )
    p.add_argument("--host", default="127.0.0.1", help="HTTP address to bind")
    p.add_argument("--port", type=int, default=8000, help="HTTP port")
    p.add_argument("--path", default="/mcp", help="HTTP endpoint path")
    p.add_argument("--max-sessions", type=int, default=64, help="HTTP sessions (envs) at once")
    p.add_argument(
        "--session-timeout",
        type=float,
        default=600.0,
        help="idle seconds before an HTTP session closes",
    )
    p.add_argument("--env-kwargs", default="{}", help="JSON keyword arguments for gym.make")
    p.add_argument(
        "--answer-tool",
        choices=("auto", "on", "off"),
        default="auto",
        help="offer an 'answer' tool; auto: exactly for envs that end with an <answer>",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from agentgym.integrations.mcp import build_server, serve_http, serve_stdio

    env_kwargs = json_object(args.env_kwargs)
    record = check_env_args(args.env_id, env_kwargs, "mcp")
    answer_tool = {"auto": None, "on": True, "off": False}[args.answer_tool]
    logging.basicConfig(  # stderr: in stdio mode stdout is the protocol channel
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr
    )
    server = build_server(record.id, env_kwargs=env_kwargs, answer_tool=answer_tool)
    if args.transport == "stdio":
        serve_stdio(server)
        return 0
    print(
        f"agentgym mcp: {record.id} on http://{args.host}:{args.port}{args.path}",
        file=sys.stderr,
        flush=True,
    )
    serve_http(
        server,
        host=args.host,
        port=args.port,
        path=args.path,
        max_sessions=args.max_sessions,
        session_idle_timeout=args.session_timeout,
    )
    return 0
