"""mkdocs hook: one site page per env family, generated from the env cards; BENCHMARKS.md.

Every env module opens with its card (a table of ids, actions, observations, turn budget and
reward range, then sections such as Observations, Actions, Rewards, Tasks and Version
History; see docs/contract.md). The cards live in the code, next to what they describe, so
this hook renders them at build time instead of keeping a second copy in ``docs/``: page
``envs/<family>.md`` holds the cards of every single-agent env module of that family, in
registry order. Registered in ``mkdocs.yml`` under ``hooks:``; the nav lists the pages.

The cards are written in reStructuredText's docstring conventions (a simple table, indented
section bodies, ``literal`` text, ``::`` blocks, Sphinx roles); :func:`card_to_markdown`
turns them into the Markdown the site renders.
"""

from __future__ import annotations

import importlib
import re
import sys
import textwrap
from collections.abc import Iterable
from pathlib import Path
from typing import Any

if str(Path(__file__).resolve().parent) not in sys.path:  # the sibling below, however loaded
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from mkdocs_rst import rst_inline_to_markdown as _inline

#: Page title of each family (families not listed get their name capitalised).
FAMILY_TITLES = {
    "games": "Games",
    "code": "Code",
    "repo": "Repositories",
    "household": "Household",
    "search": "Search",
    "users": "Simulated users",
    "visual": "Visual",
    "web": "Web",
}

_FENCED = re.compile(r"(```text\n.*?\n```)", re.DOTALL)
_RULE = re.compile(r"^=+(?:\s+=+)+\s*$")


def _table(lines: list[str]) -> list[str]:
    """An RST simple table of two columns (continuation rows have a blank first cell)."""
    second = [m.start() for m in re.finditer("=+", lines[0])][1]  # where column 2 starts
    rows: list[list[str]] = []
    for line in lines[1:-1]:
        if not line.strip():
            continue
        key, value = line[:second].strip(), line[second:].strip()
        if not key and rows:
            rows[-1][1] += " " + value
        else:
            rows.append([key, value])
    out = ["| | |", "|---|---|"]
    for key, value in rows:
        # a pipe ends a cell, except inside a code span (Python-Markdown's tables skip those)
        parts = re.split(r"(`[^`]*`)", _inline(value))
        cell = "".join(p if p.startswith("`") else p.replace("|", "\\|") for p in parts)
        out.append(f"| **{_inline(key)}** | {cell} |")
    return out


def card_to_markdown(doc: str, heading_level: int = 2) -> str:
    """One env card (a module docstring) as Markdown, its summary line as the heading."""
    lines = textwrap.dedent(doc).strip("\n").splitlines()
    summary, body = lines[0].strip(), lines[1:]
    out = [f"{'#' * heading_level} {_inline(summary)}", ""]
    i = 0
    while i < len(body):
        line = body[i]
        if _RULE.match(line):
            end = next(j for j in range(i + 1, len(body)) if _RULE.match(body[j]))
            out += _table(body[i : end + 1])
            i = end + 1
            continue
        indented_next = i + 1 < len(body) and body[i + 1].startswith("    ")
        if line.strip() and not line.startswith(" ") and indented_next:
            # a section: its title, then its indented body
            out.append(f"{'#' * (heading_level + 1)} {line.strip()}")
            out.append("")
            j = i + 1
            while j < len(body) and (body[j].startswith("    ") or not body[j].strip()):
                j += 1
            out += _section(textwrap.dedent("\n".join(body[i + 1 : j])).splitlines())
            out.append("")
            i = j
            continue
        out.append(line)
        i += 1
    text = "\n".join(out)
    # inline markup outside the fenced blocks (whole paragraphs: a literal may span lines)
    text = "".join(p if p.startswith("```") else _inline(p) for p in _FENCED.split(text))
    return re.sub(r"\n{3,}", "\n\n", text).rstrip() + "\n"


def _section(lines: list[str]) -> list[str]:
    """A section body: paragraphs and bullets as they are, ``::`` blocks fenced."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.rstrip().endswith("::"):
            out.append(line.rstrip()[:-1])
            j = i + 1
            while j < len(lines) and (not lines[j].strip() or lines[j].startswith(" ")):
                j += 1
            block = textwrap.dedent("\n".join(lines[i + 1 : j])).strip("\n")
            out += ["", "```text", block, "```", ""]
            i = j
            continue
        out.append(line)
        i += 1
    return out


def _card_of(module_name: str) -> str | None:
    """The card of an env module: its docstring, or its package's when that holds the table."""
    names = [module_name, module_name.rpartition(".")[0]]
    for name in names:
        doc = importlib.import_module(name).__doc__ or ""
        if any(_RULE.match(line) for line in doc.splitlines()):
            return doc
    return None


def family_modules() -> dict[str, list[tuple[str, list[str]]]]:
    """Family -> [(env module, its ids)], single-agent envs only, in registry order."""
    import agentgym

    families: dict[str, dict[str, list[str]]] = {}
    for record in agentgym.list_envs():
        if record.multi_agent:
            continue
        module = record.load().__module__  # the class's own module, not a registry shim
        families.setdefault(record.family, {}).setdefault(module, []).append(record.id)
    return {fam: list(mods.items()) for fam, mods in families.items()}


def family_page(family: str, modules: Iterable[tuple[str, list[str]]]) -> str:
    """The Markdown page of one family: a short preface, then each module's card."""
    title = FAMILY_TITLES.get(family, family.capitalize())
    parts = [
        f"# {title}: env cards",
        "",
        "Generated from the env modules' docstrings (their cards) when the site is built.",
        "",
    ]
    seen: set[str] = set()
    for module, ids in modules:
        card = _card_of(module)
        if card is None or card in seen:
            continue
        seen.add(card)
        parts.append(card_to_markdown(card))
        parts.append(f"Registered ids: {', '.join(f'`{i}`' for i in ids)}.\n")
    return "\n".join(parts)


def on_files(files: Any, config: Any) -> Any:
    """mkdocs hook: add ``envs/<family>.md`` for every family, and ``benchmarks.md``."""
    from mkdocs.structure.files import File

    for family, modules in family_modules().items():
        files.append(
            File.generated(config, f"envs/{family}.md", content=family_page(family, modules))
        )
    root = Path(config["config_file_path"]).parent
    files.append(File.generated(config, "benchmarks.md", content=benchmarks_page(root)))
    return files


def benchmarks_page(root: Path) -> str:
    """BENCHMARKS.md (kept at the repository root, where the harness writes it) for the site:
    its ``docs/...`` image links made relative to the docs folder."""
    return (root / "BENCHMARKS.md").read_text(encoding="utf-8").replace("](docs/", "](")
