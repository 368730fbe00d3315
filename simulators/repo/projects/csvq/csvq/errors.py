"""Query errors."""


class QueryError(Exception):
    """A query that cannot run: an unknown column, a bad function call..."""


class QuerySyntaxError(QueryError):
    """A query that does not parse; ``position`` is the character offset."""

    def __init__(self, message: str, position: int):
        super().__init__(f"{message} (at character {position})")
        self.position = position
