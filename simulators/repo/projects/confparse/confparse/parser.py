"""Parse configuration text into a :class:`~confparse.document.Config`.

Rules: ``[section]`` headers; ``key = value`` or ``key: value`` (keys are case-insensitive
and stored lower-case); ``#`` and ``;`` start comment lines; an inline comment needs a space
before its ``#``; an indented line continues the previous value; keys before any header go to
the ``DEFAULT`` section, whose keys every section inherits.
"""

from __future__ import annotations

import re

from confparse.document import DEFAULT, Config
from confparse.errors import ConfigSyntaxError

_SECTION = re.compile(r"^\[\s*([^\]]+?)\s*\]\s*$")
_PAIR = re.compile(r"^([^=:\s][^=:]*?)\s*[=:]\s*(.*)$")


def _strip_comment(value: str) -> str:
    for marker in (" #", " ;"):
        index = value.find(marker)
        if index != -1:
            value = value[:index]
    return value.rstrip()


def parse(text: str, *, allow_duplicates: bool = False) -> Config:
    """Parse ``text``.

    Raises:
        ConfigSyntaxError: a line that is neither a header, a pair, a comment nor a
            continuation; a repeated section or key (unless ``allow_duplicates``, where the
            last value wins).
    """
    config = Config()
    section = DEFAULT
    last_key: str | None = None
    seen_sections: set[str] = set()
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped or stripped[0] in "#;":
            continue
        if raw[0] in " \t" and last_key is not None:
            previous = config.raw(section, last_key)
            config.set(section, last_key, f"{previous}\n{_strip_comment(stripped)}", number)
            continue
        header = _SECTION.match(stripped)
        if header:
            section = header.group(1)
            if section in seen_sections and not allow_duplicates:
                raise ConfigSyntaxError(f"section [{section}] appears twice", number)
            seen_sections.add(section)
            config.add_section(section)
            last_key = None
            continue
        pair = _PAIR.match(stripped)
        if pair is None:
            raise ConfigSyntaxError(f"expected 'key = value', got {stripped!r}", number)
        key = pair.group(1).strip().lower()
        if config.has_own(section, key) and not allow_duplicates:
            raise ConfigSyntaxError(f"key {key!r} appears twice in [{section}]", number)
        config.set(section, key, _strip_comment(pair.group(2)), number)
        last_key = key
    return config
