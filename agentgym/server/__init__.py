"""``agentgym serve``: any registered env as a server speaking OpenEnv's wire protocol.

OpenEnv clients (``EnvClient`` over WebSocket, or plain HTTP) and the trainers built on
them talk to an agentgym env unchanged. :func:`create_app` builds the Starlette app;
:class:`ServerThread` runs it in a background thread (tests, notebooks, examples);
``agentgym serve ID`` runs it from the command line. A refused request is a
:class:`SessionError` subclass from :mod:`agentgym.server.errors`, which fixes its wire code
and HTTP status. See docs/integrations/openenv.md.
"""

from agentgym.server.app import create_app
from agentgym.server.errors import ErrorCode, SessionError
from agentgym.server.runner import ServerThread, serve
from agentgym.server.sessions import ServerLimits

__all__ = ["ErrorCode", "ServerLimits", "ServerThread", "SessionError", "create_app", "serve"]
