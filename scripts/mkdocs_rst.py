"""The docs site's reading of agentgym's docstring markup: reStructuredText conventions as Markdown.

agentgym's docstrings follow the Python convention the code base grew up with: Sphinx
cross-reference roles (``:class:`Recorder```, ``:func:`~agentgym.make```), ``literal`` text
and paragraphs ending in ``::`` before an indented example. The same docstrings feed
``help()``, the env cards and, for actions, the text the model reads, so they stay as they
are; the site converts them when it is built instead:

* :func:`rst_inline_to_markdown` turns roles into code spans (``~`` keeps the last dotted
  name, as Sphinx shows it); ``literal`` already is a Markdown code span.
* :func:`rst_docstring_to_markdown` also turns ``text::`` into ``text:`` (a lone ``::``
  vanishes), leaving the indented block under it, which Markdown renders as code.
* :class:`RstDocstrings` is a griffe extension (listed under mkdocstrings' ``extensions`` in
  ``mkdocs.yml``) that applies the latter to every docstring the API reference renders.

``scripts/mkdocs_env_cards.py`` uses :func:`rst_inline_to_markdown` for the env cards.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

#: A Sphinx cross-reference role, with or without a domain (``:py:class:``).
ROLE = re.compile(r":(?:py:)?(?:mod|class|func|meth|attr|data|obj|exc|const):`(~?)([^`]+)`")
_LITERAL = re.compile(r"``(.+?)``", re.DOTALL)  # a literal may wrap onto the next line
_DOUBLE_COLON = re.compile(r"(\S)?([ \t]*)::[ \t]*$", re.MULTILINE)


def _role_as_code(match: re.Match[str]) -> str:
    """One role as a code span: its target, or only the last dotted name after ``~``."""
    tilde, target = match.group(1), match.group(2).strip()
    if tilde:
        target = target.rsplit(".", 1)[-1]
    return f"`{target}`"


def rst_inline_to_markdown(text: str) -> str:
    """Roles and ``literals`` as single-backtick code spans (the rest of the text unchanged)."""
    text = ROLE.sub(_role_as_code, text)
    return _LITERAL.sub(lambda m: f"`{m.group(1)}`", text)


def _literal_block_marker(match: re.Match[str]) -> str:
    """``text::`` -> ``text:``; a ``::`` alone on its line (or after a space) disappears."""
    before, space = match.group(1), match.group(2)
    if before is None:
        return ""
    return f"{before}:" if not space else before


def rst_docstring_to_markdown(text: str) -> str:
    """A whole docstring: inline markup converted, ``::`` paragraph endings made plain.

    Code spans keep their content: a role inside a literal (rare) is left alone because
    roles are converted first and only then literals.
    """
    return _DOUBLE_COLON.sub(_literal_block_marker, rst_inline_to_markdown(text))


class RstDocstrings(griffe.Extension):
    """griffe extension: every loaded object's docstring converted for the site."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite ``obj``'s docstring before mkdocstrings parses and renders it."""
        if obj.docstring is not None:
            obj.docstring.value = rst_docstring_to_markdown(obj.docstring.value)
