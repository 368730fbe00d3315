"""Template errors, with the line they happened on."""


class TemplateError(Exception):
    """Base class of the engine's errors."""


class TemplateSyntaxError(TemplateError):
    """The template text is malformed (an unclosed tag, an unknown statement...)."""

    def __init__(self, message: str, line: int):
        super().__init__(f"line {line}: {message}")
        self.line = line


class UndefinedError(TemplateError):
    """A name the context does not define was used in strict mode."""
