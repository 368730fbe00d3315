"""Command-line flags generated from a configuration dataclass, so defaults have one source.

:class:`ConfigFlags` adds one flag per field of a dataclass (the fields of nested dataclass
fields included) to an argparse parser, and builds the dataclass back from what was parsed.
Type, default and help of each flag come from the dataclass alone:

* field ``num_envs`` is ``--num-envs``; field ``clip_low`` of a nested dataclass field
  ``loss`` is ``--loss.clip-low``; a :class:`Flag` renames a flag (``--minibatch`` for
  ``minibatch_size``) so that commands written for earlier versions keep working;
* ``int``, ``float`` and ``str`` convert with that type; ``bool`` is ``--x`` / ``--no-x``;
  ``Literal[...]`` and enums give choices; ``list[T]`` takes any number of values; ``dict``
  takes a JSON object; ``X | None`` whose default is not None also takes ``none``;
  ``field(metadata={"min": 1})`` bounds a number; a field without a default is positional;
* the default is the dataclass's own (a ``default_factory`` is called once, so a nested
  default such as ``PPOLossConfig(kl_coef=0.0)`` is read from the instance it makes);
* the help is the field's docstring (the string literal under it), its entry in the class
  docstring's ``Attributes:`` section, or ``field(metadata={"help": ...})``; a field of a
  class that documents none needs :attr:`Flag.help`, or building the parser fails.

A :class:`Shared` flag sets several fields at once (``--d-model`` sets the width of both
reference models). argparse applies flags in command-line order, so the last one given wins.

Example:
    >>> import argparse
    >>> from dataclasses import dataclass
    >>> from agentgym.cli.from_config import ConfigFlags
    >>> from agentgym.algos.losses import PPOLossConfig
    >>> flags = ConfigFlags(PPOLossConfig)
    >>> parser = argparse.ArgumentParser()
    >>> flags.add_to(parser)
    >>> flags.config(parser.parse_args(["--kl-coef", "0.05"])).kl_coef
    0.05
    >>> flags.config(parser.parse_args([])) == PPOLossConfig()
    True
"""

from __future__ import annotations

import argparse
import ast
import copy
import dataclasses
import enum
import functools
import inspect
import itertools
import json
import re
import textwrap
import types
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from agentgym.cli.args import json_object

T = TypeVar("T")


@dataclass(frozen=True)
class Flag:
    """How one field appears on the command line, where the generated form does not fit."""

    name: str | None = None
    """The option (``--minibatch``); None: ``--`` and the field's path with ``-`` for ``_``."""
    metavar: str | None = None
    """The value's name in ``--help`` (``PATH``); None: the flag's own name, upper-cased."""
    help: str | None = None
    """Help for a field its class leaves undocumented (never to reword a documented one)."""
    choices: tuple[Any, ...] | None = None
    """Allowed values of a ``str`` field of a class whose annotation cannot say them."""
    none: tuple[str, ...] = ()
    """More words that mean None (``("-1",)`` for "all turns"), besides ``none``."""


@dataclass(frozen=True)
class Shared:
    """One flag that sets several fields (e.g. the same setting of two models)."""

    name: str
    fields: tuple[str, ...]


@dataclass
class _Option:
    """One field, resolved: its path, flag, converter and default."""

    path: str
    owner: type
    name: str
    hint: Any
    default: Any
    flag: Flag
    option: str = ""
    kind: str = "value"  # value, toggle, list, json, positional
    convert: Callable[[str], Any] = str
    choices: list[Any] | None = None
    none_words: tuple[str, ...] = ()
    group: str = ""


def _optional(hint: Any) -> tuple[Any, bool]:
    """``(X, True)`` for ``X | None``, else ``(hint, False)``."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(hint)) == 2:
            return args[0], True
    return hint, False


def _field_default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


@functools.cache
def field_docs(cls: type) -> dict[str, str]:
    """Each field's documentation: the string under it, else its ``Attributes:`` entry."""
    docs: dict[str, str] = {}
    for base in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(base):
            continue
        docs.update(_attributes_section(inspect.getdoc(base) or ""))
        try:
            node = ast.parse(textwrap.dedent(inspect.getsource(base))).body[0]
        except (OSError, TypeError, IndexError):
            continue
        body = getattr(node, "body", [])
        for stmt, nxt in itertools.pairwise(body):
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant)
                and isinstance(nxt.value.value, str)
            ):
                docs[stmt.target.id] = inspect.cleandoc(nxt.value.value)
    return docs


def _attributes_section(doc: str) -> dict[str, str]:
    """``name: text`` entries of a Google-style ``Attributes:`` section."""
    match = re.search(r"^Attributes:\n((?:[ \t]+\S.*\n?)+)", doc, re.MULTILINE)
    if not match:
        return {}
    out: dict[str, str] = {}
    name = ""
    for line in textwrap.dedent(match.group(1)).splitlines():
        head = re.match(r"(\w+)(?: \([^)]*\))?:\s*(.*)", line)
        if head:
            name = head.group(1)
            out[name] = head.group(2)
        elif name:
            out[name] += " " + line.strip()
    return out


def _plain(text: str, flags: Mapping[str, str]) -> str:
    """Docstring markup as ``--help`` prose: ``x`` is x, or the flag of a field named x;
    ``field="v"`` is ``--flag v``; ``:func:`a.b``` is ``a.b``."""

    def literal(m: re.Match[str]) -> str:
        inner = m.group(1)
        key = re.fullmatch(r"(\w+)=\"?([^\"]*)\"?", inner)
        if key and key.group(1) in flags:
            return f"{flags[key.group(1)]} {key.group(2)}"
        return flags.get(inner, inner)

    text = re.sub(r":\w+:`~?([^`]+)`", r"\1", text)
    text = re.sub(r"``([^`]+)``", literal, text)
    return " ".join(text.split()).replace("%", "%%")


class _Toggle(argparse.Action):
    """``--x`` sets True, ``--no-x`` False."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any):
        names = [n for o in option_strings for n in (o, "--no-" + o[2:])]
        super().__init__(names, dest, nargs=0, **kwargs)

    def __call__(self, parser: Any, ns: Any, values: Any, option_string: str | None = None):
        setattr(ns, self.dest, not (option_string or "").startswith("--no-"))

    def format_usage(self) -> str:
        return " | ".join(self.option_strings)


class _SetAll(argparse.Action):
    """A :class:`Shared` flag: writes its value to every field it names."""

    def __init__(
        self, option_strings: Sequence[str], dest: str, targets: Sequence[str] = (), **kwargs: Any
    ):
        super().__init__(option_strings, dest, **kwargs)
        self.targets = tuple(targets)

    def __call__(self, parser: Any, ns: Any, values: Any, option_string: str | None = None):
        for target in self.targets:
            setattr(ns, target, values)


def _bounded(convert: Callable[[str], Any], low: float) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        value = convert(text)
        if value is not None and value < low:
            raise argparse.ArgumentTypeError(f"expected a number >= {low}, got {value}")
        return value

    return parse


def _or_none(convert: Callable[[str], Any], words: tuple[str, ...]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        return None if text.lower() in words else convert(text)

    return parse


def _enum(cls: type[enum.Enum]) -> Callable[[str], Any]:
    by_text = {str(m.value): m for m in cls} | {m.name: m for m in cls}

    def parse(text: str) -> Any:
        if text not in by_text:
            raise argparse.ArgumentTypeError(
                f"invalid choice: {text!r} (choose from {', '.join(map(repr, by_text))})"
            )
        return by_text[text]

    return parse


def _resolve(opt: _Option) -> None:
    """Sets ``kind``, ``convert`` and ``choices`` of ``opt`` from its type hint."""
    hint, optional = _optional(opt.hint)
    origin = typing.get_origin(hint)
    if hint is bool:
        opt.kind = "toggle"
        return
    if origin in (list, tuple):
        opt.kind = "list"
        hint = typing.get_args(hint)[0]
    elif hint is dict or origin is dict:
        opt.kind = "json"
        return
    if origin is Literal:
        opt.choices = list(typing.get_args(hint))
        opt.convert = type(opt.choices[0])
    elif isinstance(hint, type) and issubclass(hint, enum.Enum):
        opt.convert = _enum(hint)
        opt.choices = list(hint)
    elif hint in (int, float, str):
        opt.convert = hint
        opt.choices = list(opt.flag.choices) if opt.flag.choices else None
    else:
        raise TypeError(f"{opt.owner.__name__}.{opt.name}: no flag for type {opt.hint!r}")
    low = _metadata(opt).get("min")
    if low is not None:
        opt.convert = _bounded(opt.convert, low)
    if optional and opt.default is not None and hint is not str and opt.kind == "value":
        opt.none_words = (*opt.flag.none, "none")
        opt.convert = _or_none(opt.convert, opt.none_words)
        if opt.choices is not None:
            opt.choices.append(None)


def _metadata(opt: _Option) -> Mapping[str, Any]:
    """The ``field(metadata=...)`` of ``opt``'s field."""
    return next(f.metadata for f in dataclasses.fields(opt.owner) if f.name == opt.name)


class ConfigFlags(Generic[T]):
    """The flags of dataclass ``cls`` (see the module docstring).

    Args:
        cls: The configuration dataclass.
        flags: By field path (``"loss.kl_coef"``): what differs from the generated flag.
        shared: Flags that set several fields.
    """

    def __init__(
        self,
        cls: type[T],
        flags: Mapping[str, Flag] | None = None,
        shared: Sequence[Shared] = (),
    ):
        self.cls = cls
        self.shared = tuple(shared)
        self.options = {o.path: o for o in self._walk(cls, "", None, dict(flags or {}), "")}
        unknown = set(flags or {}) - set(self.options)
        if unknown:
            raise TypeError(f"{cls.__name__} has no field {sorted(unknown)}")
        values = {c for o in self.options.values() for c in o.choices or () if isinstance(c, str)}
        self._flags_by_name = {
            o.name: o.option
            for o in self.options.values()
            if "." not in o.path and o.name not in values  # ``checkpoint``: a choice's name
        }

    def _walk(
        self, cls: type, prefix: str, instance: Any, flags: dict[str, Flag], group: str
    ) -> Iterator[_Option]:
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            if not f.init:
                continue
            path = prefix + f.name
            default = getattr(instance, f.name) if instance is not None else _field_default(f)
            if dataclasses.is_dataclass(hints[f.name]):
                nested = None if default is dataclasses.MISSING else default
                yield from self._walk(hints[f.name], path + ".", nested, flags, path)
                continue
            opt = _Option(path, cls, f.name, hints[f.name], default, flags.get(path, Flag()))
            opt.group = group
            opt.option = opt.flag.name or "--" + path.replace("_", "-")
            _resolve(opt)
            if default is dataclasses.MISSING:
                opt.kind = "positional"
            yield opt

    def option(self, path: str) -> str:
        """The flag of field ``path`` (``"--minibatch"`` for ``"minibatch_size"``)."""
        return self.options[path].option

    def help(self, opt: _Option) -> str:
        """``opt``'s help: its field's documentation as prose, and how to write None."""
        doc = opt.flag.help or field_docs(opt.owner).get(opt.name)
        doc = doc or _metadata(opt).get("help")
        if not doc:
            raise TypeError(
                f"{opt.owner.__name__}.{opt.name} has no docstring: document it or give "
                f"Flag(help=...) for {opt.path!r}"
            )
        scope = {n: o.option for n, o in self._siblings(opt)}
        text = _plain(doc, {**self._flags_by_name, **scope})
        if opt.kind == "toggle" and opt.default:
            text += f" (default: on; {opt.option.replace('--', '--no-', 1)} turns it off)"
        if opt.none_words:
            text += f" (write {' or '.join(opt.none_words)} for None)"
        return text

    def _siblings(self, opt: _Option) -> Iterator[tuple[str, _Option]]:
        prefix = opt.path.rpartition(".")[0]
        for other in self.options.values():
            if other.path.rpartition(".")[0] == prefix:
                yield other.name, other

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        """Adds every field's flag (nested dataclasses in their own ``--help`` groups)."""
        groups: dict[str, Any] = {"": parser}
        for opt in self.options.values():
            if opt.group not in groups:
                groups[opt.group] = parser.add_argument_group(*self._group_title(opt.group))
            self._add(groups[opt.group], opt)
        for shared in self.shared:
            first = self.options[shared.fields[0]]
            targets = " and ".join(self.options[p].option for p in shared.fields)
            defaults = " and ".join(str(self.options[p].default) for p in shared.fields)
            parser.add_argument(
                shared.name,
                action=_SetAll,
                targets=shared.fields,
                type=first.convert,
                choices=first.choices,
                default=argparse.SUPPRESS,
                metavar=first.flag.metavar or _metavar(shared.name),
                help=f"{self.help(first)} Sets {targets} (defaults {defaults}).",
            )

    def _group_title(self, path: str) -> tuple[str, str]:
        """A nested dataclass's ``--help`` heading and text: the field's doc, else its class's."""
        parent, _, name = path.rpartition(".")
        owner = self.cls if not parent else self._nested_class(parent)
        nested = self._nested_class(path)
        doc = field_docs(owner).get(name) or (inspect.getdoc(nested) or "").split("\n\n")[0]
        scope = {o.name: o.option for o in self.options.values() if o.group == path}
        text = _plain(doc, {**self._flags_by_name, **scope}).replace("%%", "%")
        text = "For " + text if text.startswith("-") else text  # not read as an option
        return f"{path} ({nested.__name__})", textwrap.fill(text, 76)  # not %-formatted

    def _nested_class(self, path: str) -> type:
        cls: Any = self.cls
        for part in path.split("."):
            cls = typing.get_type_hints(cls)[part]
        return typing.cast(type, cls)

    def _add(self, group: Any, opt: _Option) -> None:
        help_ = self.help(opt)
        if opt.kind == "positional":
            group.add_argument(opt.path, metavar=opt.flag.metavar, type=opt.convert, help=help_)
            return
        kw: dict[str, Any] = {"dest": opt.path, "help": help_}
        if opt.kind == "toggle":
            group.add_argument(opt.option, action=_Toggle, default=opt.default, **kw)
            return
        kw["metavar"] = opt.flag.metavar or _metavar(opt.option)
        if opt.kind == "json":
            kw["metavar"] = opt.flag.metavar or "JSON"
            default = None if opt.default is None else json.dumps(opt.default)
            group.add_argument(opt.option, default=default, **kw)
            return
        if opt.choices is not None:
            kw["choices"] = opt.choices
            if not opt.flag.metavar:
                kw.pop("metavar")  # argparse shows {a,b,c}
        nargs = {"nargs": "*"} if opt.kind == "list" else {}
        group.add_argument(opt.option, type=opt.convert, default=opt.default, **nargs, **kw)

    def config(self, ns: argparse.Namespace) -> T:
        """The dataclass built from parsed flags (every field from its flag)."""
        return typing.cast(T, self._build(self.cls, "", ns))

    def to_argv(self, config: T) -> list[str]:
        """The arguments that :meth:`config` turns back into ``config``: its positional
        fields, then a flag for each field that differs from its default."""
        argv: list[str] = []
        for opt in sorted(self.options.values(), key=lambda o: o.kind != "positional"):
            value: Any = config
            for part in opt.path.split("."):
                value = getattr(value, part)
            if opt.kind == "positional":
                argv.append(_text(value))
            elif value == opt.default:
                continue
            elif opt.kind == "toggle":
                argv.append(opt.option if value else opt.option.replace("--", "--no-", 1))
            elif value is None:
                argv += [opt.option, "none"]
            elif opt.kind == "json":
                argv += [opt.option, json.dumps(value)]
            elif opt.kind == "list":
                argv += [opt.option, *map(_text, value)]
            else:
                argv += [opt.option, _text(value)]
        return argv

    def _build(self, cls: type, prefix: str, ns: argparse.Namespace) -> Any:
        hints = typing.get_type_hints(cls)
        kwargs: dict[str, Any] = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            if not f.init:
                continue
            path = prefix + f.name
            if dataclasses.is_dataclass(hints[f.name]):
                kwargs[f.name] = self._build(hints[f.name], path + ".", ns)
                continue
            value = getattr(ns, path)
            if self.options[path].kind == "json" and isinstance(value, str):
                value = json_object(value, self.options[path].option)
            kwargs[f.name] = copy.deepcopy(value)
        return cls(**kwargs)


def add_deferred(
    parser: argparse.ArgumentParser, make: Callable[[], ConfigFlags[Any]], extra: str
) -> None:
    """Add ``make()``'s flags to ``parser`` when it first parses or shows help (at once for
    a parser that cannot defer), so importing the config's module (torch, for
    ``TrainConfig``) costs only its own command. A missing package is a one-line error
    that names the install ``extra``."""

    def add(p: argparse.ArgumentParser) -> None:
        try:
            flags = make()
        except ImportError as exc:
            p.exit(2, f"{p.prog}: error: needs {exc.name}: pip install 'agentgym-suite[{extra}]'\n")
        flags.add_to(p)

    defer = getattr(parser, "defer", None)
    if callable(defer):
        defer(add)
    else:
        add(parser)


def _text(value: Any) -> str:
    return str(value.value if isinstance(value, enum.Enum) else value)


def _metavar(option: str) -> str:
    return option.lstrip("-").rpartition(".")[2].replace("-", "_").upper()
