"""Configuration errors."""


class ConfigError(Exception):
    """Base class of every confparse error."""


class ConfigSyntaxError(ConfigError):
    """The text is not a valid configuration; ``line`` is 1-based."""

    def __init__(self, message: str, line: int):
        super().__init__(f"line {line}: {message}")
        self.line = line


class InterpolationError(ConfigError):
    """A ``${...}`` reference to a missing key, or a reference cycle."""


class SchemaError(ConfigError):
    """Values that do not satisfy the schema; ``problems`` lists each one."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems
