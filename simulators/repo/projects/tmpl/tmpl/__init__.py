"""tmpl: a small text template engine."""

from tmpl.engine import Environment, Template, render
from tmpl.errors import TemplateError, TemplateSyntaxError, UndefinedError

__all__ = [
    "Environment",
    "Template",
    "TemplateError",
    "TemplateSyntaxError",
    "UndefinedError",
    "render",
]
