"""confparse: INI-style configuration files with types, schemas and layers."""

from confparse.document import Config
from confparse.errors import ConfigError, ConfigSyntaxError, InterpolationError, SchemaError
from confparse.layers import apply_env, merge
from confparse.parser import parse
from confparse.schema import Field, Schema
from confparse.writer import dump

__all__ = [
    "Config",
    "ConfigError",
    "ConfigSyntaxError",
    "Field",
    "InterpolationError",
    "Schema",
    "SchemaError",
    "apply_env",
    "dump",
    "merge",
    "parse",
]
