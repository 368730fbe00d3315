"""``Router``: register routes, match requests, reverse names into URLs."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from router.errors import MethodNotAllowed, NotFound, ReverseError, RouteError
from router.paths import join_paths, normalize_path
from router.patterns import Pattern, compile_pattern

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


@dataclass(frozen=True)
class Route:
    pattern: Pattern
    methods: frozenset[str]
    handler: Callable[..., Any]
    name: str | None = None


@dataclass(frozen=True)
class Match:
    route: Route
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def handler(self) -> Callable[..., Any]:
        return self.route.handler

    def __call__(self, *args: Any) -> Any:
        return self.route.handler(*args, **self.params)


class Router:
    """Routes tried most specific first (then in the order they were added)."""

    def __init__(self, *, strict_slashes: bool = False):
        self.routes: list[Route] = []
        self.names: dict[str, Route] = {}
        self.strict_slashes = strict_slashes

    def add(
        self,
        template: str,
        handler: Callable[..., Any],
        methods: Iterable[str] = ("GET",),
        name: str | None = None,
    ) -> Route:
        wanted = frozenset(m.upper() for m in methods)
        unknown = wanted - set(METHODS)
        if unknown:
            raise RouteError(f"unknown HTTP methods {sorted(unknown)}")
        if not wanted:
            raise RouteError("a route needs at least one method")
        if "GET" in wanted:
            wanted = wanted | {"HEAD"}
        route = Route(compile_pattern(template), wanted, handler, name)
        if name is not None:
            if name in self.names:
                raise RouteError(f"route name {name!r} is already used")
            self.names[name] = route
        self.routes.append(route)
        self.routes.sort(key=lambda r: r.pattern.specificity(), reverse=True)
        return route

    def route(self, template: str, methods: Iterable[str] = ("GET",), name: str | None = None):
        """Decorator form of :meth:`add`."""

        def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
            self.add(template, fn, methods, name or fn.__name__)
            return fn

        return decorate

    def match(self, method: str, path: str) -> Match:
        """The route for ``method`` and ``path``.

        Raises:
            NotFound: no route's pattern matches the path.
            MethodNotAllowed: some do, but not for this method.
        """
        method = method.upper()
        clean = normalize_path(path, keep_trailing_slash=self.strict_slashes)
        allowed: set[str] = set()
        for route in self.routes:
            params = route.pattern.match(clean)
            if params is None:
                continue
            if method in route.methods:
                return Match(route, params)
            allowed |= route.methods
        if allowed:
            raise MethodNotAllowed(method, sorted(allowed))
        raise NotFound(path)

    def url_for(self, name: str, **params: Any) -> str:
        """The path of the route ``name`` with ``params`` filled in; extra parameters become
        the query string (sorted by key)."""
        route = self.names.get(name)
        if route is None:
            raise ReverseError(f"no route named {name!r}")
        path_names = {n for n, _ in route.pattern.params}
        try:
            path = route.pattern.build({k: v for k, v in params.items() if k in path_names})
        except KeyError as exc:
            raise ReverseError(f"route {name!r} needs parameter {exc.args[0]!r}") from None
        except ValueError as exc:
            raise ReverseError(f"route {name!r}: {exc}") from None
        extra = {k: v for k, v in params.items() if k not in path_names}
        if extra:
            from router.query import build_query

            path += "?" + build_query(extra)
        return path

    def include(self, prefix: str, other: Router, name_prefix: str = "") -> None:
        """Mount every route of ``other`` under ``prefix`` (names get ``name_prefix``)."""
        for route in other.routes:
            name = f"{name_prefix}{route.name}" if route.name else None
            self.add(
                join_paths(prefix, route.pattern.template),
                route.handler,
                route.methods - {"HEAD"} or route.methods,
                name,
            )

    def allowed_methods(self, path: str) -> list[str]:
        """Every method some route accepts for ``path`` (empty when none matches)."""
        clean = normalize_path(path, keep_trailing_slash=self.strict_slashes)
        found: set[str] = set()
        for route in self.routes:
            if route.pattern.match(clean) is not None:
                found |= route.methods
        return sorted(found)
