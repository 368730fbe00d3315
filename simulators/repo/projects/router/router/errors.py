"""Routing errors."""


class RouteError(Exception):
    """A malformed route pattern or a duplicate route name."""


class NotFound(LookupError):
    """No route matches the path (HTTP 404)."""

    status = 404


class MethodNotAllowed(LookupError):
    """Routes match the path, but none for this method (HTTP 405); ``allowed`` lists the
    methods that would match, sorted."""

    status = 405

    def __init__(self, method: str, allowed: list[str]):
        super().__init__(f"{method} not allowed; allowed: {', '.join(allowed)}")
        self.allowed = allowed


class ReverseError(LookupError):
    """``url_for`` got an unknown name, missing parameters or a value its converter refuses."""
