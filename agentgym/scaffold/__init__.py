"""The package ``agentgym new-env NAME`` writes: an env that checks, tests and trains as generated.

The templates in ``templates/`` are the tutorial's package (docs/own-env.md) with a world the
reference agent learns within a few CPU minutes: a track walk with a ``move`` tool, seeded
train/test tasks, step rewards, admissible actions, an oracle, a history-free state key, a
test file and the ``agentgym.envs`` entry point. :func:`scaffold_names` derives every name
from ``NAME``; :func:`render` fills the templates; :func:`write` puts them on disk.

Example:
    >>> names = scaffold_names("GridWalk")
    >>> names.env_id, names.package, names.dist, names.directory
    ('grid_walk/GridWalk-v0', 'grid_walk', 'grid-walk', 'grid-walk')
    >>> sorted(render(names))[:2]
    ['README.md', 'grid_walk/__init__.py']
"""

from __future__ import annotations

import importlib.util
import keyword
import re
import string
from dataclasses import asdict, dataclass
from pathlib import Path

from agentgym.error import InvalidConfigError

__all__ = ["ScaffoldNames", "render", "scaffold_names", "write"]

_TEMPLATES = Path(__file__).resolve().parent / "templates"
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)*")
_NAMESPACE = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")


@dataclass(frozen=True)
class ScaffoldNames:
    """Every name of a generated package, derived from the one the user typed."""

    name: str  # as typed
    camel: str  # GridWalk: the class (GridWalkEnv) and the id's name
    snake: str  # grid_walk: the task prefix
    kebab: str  # grid-walk: the default folder
    package: str  # grid_walk: the import package
    dist: str  # grid-walk: the distribution name in pyproject.toml
    env_id: str  # grid_walk/GridWalk-v0
    directory: str  # where it goes, relative to the working directory


def _words(name: str) -> list[str]:
    """``GridWalk``, ``grid_walk``, ``grid-walk`` -> ``["grid", "walk"]``."""
    words: list[str] = []
    for chunk in re.split(r"[-_]", name):
        words += [w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+", chunk)]
    return words


def scaffold_names(
    name: str, *, namespace: str | None = None, directory: str | None = None
) -> ScaffoldNames:
    """The names of the package for ``name``; a typed error for a name that cannot be one.

    Raises:
        InvalidConfigError: ``name`` is not letters and digits (with ``-`` or ``_`` between
            words), is a Python keyword, or names a module that is already importable (the
            generated package would shadow it or be shadowed).
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidConfigError(
            f"new-env NAME must start with a letter and hold only letters and digits, with - or _ "
            f"between words (e.g. GridWalk or grid-walk); got {name!r}."
        )
    words = _words(name)
    snake = "_".join(words)
    if keyword.iskeyword(snake):
        raise InvalidConfigError(f"new-env NAME {name!r} is a Python keyword; pick another name.")
    if importlib.util.find_spec(snake) is not None:
        raise InvalidConfigError(
            f"a module named {snake!r} is already importable here, so a package of that name "
            f"would clash with it; pick another NAME (got {name!r})."
        )
    if namespace is not None and not _NAMESPACE.fullmatch(namespace):
        raise InvalidConfigError(
            f"--namespace must start with a letter and hold letters, digits, '_', '.' or '-'; "
            f"got {namespace!r}."
        )
    # A name typed in CamelCase is kept as typed (HTTPProxy stays HTTPProxy).
    camel = name if name[0].isupper() and name.isalnum() else "".join(w.capitalize() for w in words)
    kebab = "-".join(words)
    return ScaffoldNames(
        name=name,
        camel=camel,
        snake=snake,
        kebab=kebab,
        package=snake,
        dist=kebab,
        env_id=f"{namespace or snake}/{camel}-v0",
        directory=directory or kebab,
    )


#: template file -> path in the generated package ($package is replaced).
_LAYOUT = {
    "pyproject.toml.tmpl": "pyproject.toml",
    "README.md.tmpl": "README.md",
    "package_init.py.tmpl": "$package/__init__.py",
    "env.py.tmpl": "$package/env.py",
    "test_env.py.tmpl": "tests/test_env.py",
}


def render(names: ScaffoldNames) -> dict[str, str]:
    """The generated files: relative path -> text."""
    values = asdict(names)
    out = {}
    for template, target in _LAYOUT.items():
        text = (_TEMPLATES / template).read_text(encoding="utf-8")
        out[string.Template(target).substitute(values)] = string.Template(text).substitute(values)
    return out


def write(names: ScaffoldNames, root: str | Path = ".", *, force: bool = False) -> list[Path]:
    """Write the package under ``root / names.directory``; returns the files written.

    Refuses (typed error, nothing written) when a file it would write exists, unless
    ``force``; other files in the folder are left alone.
    """
    base = Path(root) / names.directory
    files = {base / rel: text for rel, text in render(names).items()}
    existing = sorted(str(p) for p in files if p.exists())
    if existing and not force:
        raise InvalidConfigError(
            f"new-env would overwrite {', '.join(existing)}; nothing was written. Pick another "
            "NAME or --dir, or pass --force to replace these files."
        )
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return list(files)
