"""router: URL routing with typed path parameters."""

from router.errors import MethodNotAllowed, NotFound, ReverseError, RouteError
from router.paths import normalize_path
from router.query import build_query, parse_query
from router.routing import Match, Router

__all__ = [
    "Match",
    "MethodNotAllowed",
    "NotFound",
    "ReverseError",
    "RouteError",
    "Router",
    "build_query",
    "normalize_path",
    "parse_query",
]
