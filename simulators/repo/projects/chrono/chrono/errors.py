"""Errors raised by chrono's parsers."""


class ParseError(ValueError):
    """Text that is not a date, duration or relative expression chrono understands.

    ``position`` is the index in ``text`` where parsing stopped.
    """

    def __init__(self, message: str, text: str = "", position: int = 0):
        super().__init__(message)
        self.text = text
        self.position = position
