"""Write a configuration back as text (raw values, so references survive)."""

from __future__ import annotations

from confparse.document import DEFAULT, Config


def _format_value(value: str) -> str:
    lines = value.split("\n")
    return "\n".join([lines[0], *("    " + line for line in lines[1:])])


def dump(config: Config) -> str:
    """Text that :func:`confparse.parse` reads back to an equal config: ``DEFAULT`` keys
    first, then each section with only its own keys; a blank line between sections."""
    blocks = []
    defaults = config._data.get(DEFAULT, {})
    if defaults:
        blocks.append("\n".join(f"{k} = {_format_value(v)}" for k, v in defaults.items()))
    for section in config.sections():
        lines = [f"[{section}]"]
        for key, value in config._data[section].items():
            lines.append(f"{key} = {_format_value(value)}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n" if blocks else ""
