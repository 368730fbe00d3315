"""The CLI's flags, defaults and help come from the configuration dataclasses (issue 33).

``agentgym train`` with no flags builds ``TrainConfig()``, ``agentgym eval ID`` builds
``EvalConfig(ID)`` and ``agentgym serve ID`` builds ``ServeConfig(ID)``; every field of each
has a flag that reaches that field; each flag's help is its field's documentation; and the
commands written in the docs still parse.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import enum
import re
import shlex
import subprocess
import sys
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest

from agentgym.algos.trainer import TrainConfig
from agentgym.cli import build_parser, cmd_eval, cmd_serve, cmd_train
from agentgym.cli.from_config import ConfigFlags, Flag, Shared
from agentgym.error import InvalidConfigError
from agentgym.evaluation import EvalConfig
from agentgym.server.runner import ServeConfig
from agentgym.server.sessions import ServerLimits

ROOT = Path(__file__).resolve().parents[2]
ENV = "agentgym/Sokoban-Tiny-v0"
PARSER = build_parser()


def _parse(*argv: str) -> argparse.Namespace:
    return PARSER.parse_args(list(argv))


# --- one source: no flags is the dataclass's defaults ------------------------------------


def test_train_with_no_flags_builds_the_default_train_config():
    assert cmd_train.train_config(_parse("train")) == TrainConfig()


def test_eval_with_only_an_id_builds_the_default_eval_config():
    assert cmd_eval.eval_config(_parse("eval", ENV)) == EvalConfig(ENV)


def test_serve_with_only_an_id_builds_the_default_serve_config():
    assert cmd_serve.config_flags().config(_parse("serve", ENV)) == ServeConfig(ENV)


def test_the_one_set_of_training_defaults_is_the_documented_one():
    """The values chosen where the CLI and ``TrainConfig`` used to differ (CHANGELOG.md,
    docs/training.md): the ones the README's and BENCHMARKS.md's from-scratch runs used."""
    cfg = TrainConfig()
    chosen = (cfg.lr, cfg.ppo_epochs, cfg.minibatch_size, cfg.num_envs, cfg.tasks_per_iter)
    assert chosen == (3e-3, 4, 128, 32, 4)
    assert (cfg.model.d_model, cfg.model.n_layers, cfg.loss.kl_coef) == (32, 2, 0.0)
    text = " ".join(PARSER._subparsers._group_actions[0].choices["train"].format_help().split())
    for shown in ("--lr LR AdamW", "(default: 0.003)", "--minibatch MINIBATCH Rows per"):
        assert shown in text


# --- every field has a flag, and the flag reaches that field -------------------------------


def _base(hint: Any) -> Any:
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return args[0] if typing.get_origin(hint) in (typing.Union, type(int | None)) else hint


def _other_value(opt: Any) -> Any:
    """A value of the option's type that differs from its default (a required field has
    none: ``dataclasses.MISSING``, whose text holds its address and would make the test's
    id differ from process to process, which pytest-xdist refuses)."""
    hint = _base(opt.hint)
    default = None if opt.default is dataclasses.MISSING else opt.default
    if opt.kind == "toggle":
        return not default
    if opt.choices:
        return next(c for c in opt.choices if c is not None and c != default)
    if opt.kind == "json":
        return {"k": [1, "two"]}
    if opt.kind == "list":
        return [3, 4] if typing.get_args(hint)[0] is int else ["alpha", "beta"]
    if hint is int:
        return (default or 0) + 3
    if hint is float:
        return (default or 0.0) + 0.25
    return f"x{default or ''}"


def _cases() -> list[Any]:
    cases = []
    for command, flags, default in (
        ("train", cmd_train.config_flags(), TrainConfig()),
        ("eval", cmd_eval.config_flags(), EvalConfig(ENV)),
        ("serve", cmd_serve.config_flags(), ServeConfig(ENV)),
    ):
        for path, opt in flags.options.items():
            values = [_other_value(opt)] + ([None] if opt.none_words else [])
            for value in values:
                case = (command, flags, default, path, value)
                cases.append(pytest.param(*case, id=f"{command}:{path}={value!r}"[:60]))
    return cases


def _set(config: Any, path: str, value: Any) -> Any:
    changed = copy.deepcopy(config)
    *parents, name = path.split(".")
    owner = changed
    for part in parents:
        owner = getattr(owner, part)
    setattr(owner, name, value)
    return changed


@pytest.mark.parametrize(("command", "flags", "default", "path", "value"), _cases())
def test_every_field_round_trips_through_its_flag(command, flags, default, path, value):
    expected = _set(default, path, value)
    argv = flags.to_argv(expected)
    built = flags.config(_parse(command, *argv))
    assert built == expected, argv
    assert built != default  # the flag changed the field, not nothing


def test_the_documented_flag_names_reach_their_fields():
    cfg = cmd_train.train_config(
        _parse(
            "train",
            *("--env", "agentgym/WebTodoText-v0", "--tasks", "2", "--minibatch", "64"),
            *("--model", "m", "--out", "runs/x", "--prompt-bytes", "64", "--kl-coef", "0.05"),
            *("--context-tokens", "512", "--candidates", "element", "--gamma", "0.9"),
            *("--trees", "3", "--history-turns", "-1", "--no-progress", "--max-turns", "7"),
        )
    )
    assert (cfg.env_id, cfg.tasks_per_iter, cfg.minibatch_size) == (
        "agentgym/WebTodoText-v0",
        2,
        64,
    )
    assert (cfg.hf_model, cfg.out_dir, cfg.model.max_prompt_bytes) == ("m", "runs/x", 64)
    assert (cfg.loss.kl_coef, cfg.word.max_tokens, cfg.model.candidates) == (0.05, 512, "element")
    assert (cfg.gigpo.gamma, cfg.tree.trees, cfg.history_turns) == (0.9, 3, None)
    assert cfg.progress is False and cfg.env_kwargs == {"max_turns": 7}
    serve = cmd_serve.config_flags().config(
        _parse(
            "serve", ENV, "--session-timeout", "5", "--step-workers", "2", "--header-timeout", "9"
        )
    )
    assert serve.limits == ServerLimits(session_timeout_s=5.0, step_workers=2)
    assert serve.header_timeout_s == 9.0


def test_a_shared_flag_sets_both_models_and_the_last_flag_given_wins():
    both = cmd_train.train_config(_parse("train", "--d-model", "16", "--context", "dialogue"))
    assert (both.model.d_model, both.word.d_model) == (16, 16)
    assert both.model.context == both.word.context == "dialogue"
    own_last = cmd_train.train_config(_parse("train", "--d-model", "16", "--word.d-model", "8"))
    assert (own_last.model.d_model, own_last.word.d_model) == (16, 8)
    shared_last = cmd_train.train_config(_parse("train", "--word.d-model", "8", "--d-model", "16"))
    assert (shared_last.model.d_model, shared_last.word.d_model) == (16, 16)
    untouched = cmd_train.train_config(_parse("train", "--layers", "1"))
    assert untouched.word.d_model == TrainConfig().word.d_model == 128  # each keeps its own


# --- help is the field's documentation -----------------------------------------------------


@pytest.mark.parametrize("command", ["train", "eval", "serve"])
def test_help_lists_every_field_with_its_help(command):
    sub = PARSER._subparsers._group_actions[0].choices[command]
    text = sub.format_help()
    flags = {"train": cmd_train, "eval": cmd_eval, "serve": cmd_serve}[command].config_flags()
    by_dest = {a.dest: a for a in sub._actions}
    for path, opt in flags.options.items():
        assert (opt.flag.metavar or path if opt.kind == "positional" else opt.option) in text
        assert by_dest[path].help, path


@pytest.mark.parametrize(
    ("command", "flag", "words"),
    [
        ("train", "--lr", "AdamW learning rate"),  # TrainConfig's docstring
        ("train", "--kl-coef", "Weight beta of the k3 KL"),  # a nested dataclass's docstring
        ("train", "--policy", "a local transformers model, --model;"),  # ``hf_model`` as its flag
        ("train", "--word.n-heads", "Attention heads per block of the word"),  # Flag(help=)
        ("train", "--d-model", "Sets --model.d-model and --word.d-model (defaults 32 and 128)"),
        ("serve", "--max-sessions", "Live envs at once (sessions open"),  # Attributes: section
        ("eval", "--checkpoint", "--policy checkpoint: the checkpoint.pt"),  # ``policy="..."``
    ],
)
def test_help_text_comes_from_the_dataclass(command, flag, words):
    sub = PARSER._subparsers._group_actions[0].choices[command]
    sub.format_help()
    action = next(a for a in sub._actions if flag in a.option_strings)
    assert words in action.help


# --- each type kind ------------------------------------------------------------------------


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclass
class Inner:
    """Settings of a part.

    Attributes:
        width: How wide it is.
        mode: How it works.
    """

    width: int = 4
    mode: str = "fast"


@dataclass
class Kinds:
    """Every kind of field the generator turns into a flag."""

    name: str
    """A positional (no default)."""
    count: int = field(default=2, metadata={"min": 1})
    """An integer >= 1."""
    rate: float = 0.5
    """A float."""
    label: str = "a"
    """A string."""
    on: bool = True
    """A flag that is on."""
    off: bool = False
    """A flag that is off."""
    algo: Literal["x", "y"] = "x"
    """A choice."""
    colour: Colour = Colour.RED
    """An enum."""
    seeds: list[int] = field(default_factory=list)
    """Numbers."""
    maybe: list[int] | None = None
    """Numbers, or None."""
    extra: dict[str, Any] = field(default_factory=dict)
    """JSON."""
    turns: int | None = 1
    """None: all."""
    budget: float | None = None
    """Unset by default."""
    inner: Inner = field(default_factory=lambda: Inner(width=8))
    """A nested part (its default from this factory)."""


KIND_FLAGS = {
    "label": Flag("--tag"),
    "turns": Flag(none=("-1",)),
    "inner.mode": Flag(choices=("fast", "slow")),
}


def _kinds() -> tuple[ConfigFlags[Kinds], argparse.ArgumentParser]:
    flags = ConfigFlags(Kinds, KIND_FLAGS, [Shared("--size", ("count", "inner.width"))])
    parser = argparse.ArgumentParser(exit_on_error=False)
    flags.add_to(parser)
    return flags, parser


def test_each_type_kind_parses_into_its_field():
    flags, parser = _kinds()
    assert flags.config(parser.parse_args(["n"])) == Kinds("n")
    assert flags.config(parser.parse_args(["n"])).inner.width == 8  # the factory's default
    argv = ["n", "--count", "3", "--rate", "0.25", "--tag", "b", "--no-on", "--off"]
    argv += ["--algo", "y", "--colour", "blue", "--seeds", "1", "2", "--maybe", "5"]
    argv += ["--extra", '{"k": [1]}', "--turns", "-1", "--budget", "2.5"]
    argv += ["--inner.width", "3", "--inner.mode", "slow"]
    got = flags.config(parser.parse_args(argv))
    assert got == Kinds(
        "n", 3, 0.25, "b", False, True, "y", Colour.BLUE, [1, 2], [5], {"k": [1]}, None, 2.5,
        Inner(3, "slow"),
    )  # fmt: skip
    assert flags.config(parser.parse_args(["n", "--turns", "none"])).turns is None
    assert flags.config(parser.parse_args(["n", "--turns", "5"])).turns == 5
    shared = flags.config(parser.parse_args(["n", "--size", "6"]))
    assert (shared.count, shared.inner.width) == (6, 6)
    assert (
        flags.to_argv(got)[0] == "n" and flags.config(parser.parse_args(flags.to_argv(got))) == got
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["n", "--count", "0"],  # below metadata min
        ["n", "--algo", "z"],  # not a Literal choice
        ["n", "--colour", "green"],  # not an enum value
        ["n", "--inner.mode", "medium"],  # not a Flag choice
        ["n", "--rate", "fast"],  # not a float
        ["n", "--budget", "none"],  # None is its default: no word for it
        ["n", "--label", "b"],  # renamed to --tag
    ],
)
def test_a_value_outside_the_fields_type_is_a_usage_error(argv, capsys):
    flags, _ = _kinds()
    parser = argparse.ArgumentParser()
    flags.add_to(parser)
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args(argv)
    assert exit_.value.code == 2


def test_a_json_field_that_is_not_an_object_is_a_typed_error_naming_the_flag():
    flags, parser = _kinds()
    with pytest.raises(InvalidConfigError, match="--extra must be a JSON object"):
        flags.config(parser.parse_args(["n", "--extra", "[1]"]))


def test_help_shows_defaults_and_choices_of_each_kind():
    _, parser = _kinds()
    text = " ".join(parser.format_help().split())
    assert "--algo {x,y} A choice." in text
    assert "--on, --no-on A flag that is on. (default: on; --no-on turns it off)" in text
    assert "--turns TURNS None: all. (write -1 or none for None)" in text
    assert "inner (Inner): A nested part (its default from this factory)." in text
    assert "--inner.width WIDTH How wide it is." in text  # from the Attributes: section
    assert "--size SIZE An integer >= 1. Sets --count and --inner.width (defaults 2 and 8)." in text


@dataclass
class Undocumented:
    """A class whose field says nothing."""

    quiet: int = 0


def test_a_field_without_documentation_is_refused_when_the_flags_are_built():
    parser = argparse.ArgumentParser()
    with pytest.raises(TypeError, match=r"Undocumented\.quiet has no docstring"):
        ConfigFlags(Undocumented).add_to(parser)
    ConfigFlags(Undocumented, {"quiet": Flag(help="Given here.")}).add_to(parser)
    assert "Given here." in parser.format_help()


def test_an_unsupported_type_or_unknown_field_is_refused():
    @dataclass
    class Odd:
        pair: set[int] = field(default_factory=set)
        """A set."""

    with pytest.raises(TypeError, match="no flag for type"):
        ConfigFlags(Odd)
    with pytest.raises(TypeError, match="has no field"):
        ConfigFlags(Kinds, {"nope": Flag()})


# --- compatibility and cost ------------------------------------------------------------------


def _documented_commands() -> list[tuple[str, str]]:
    """``(file, command)`` for every ``agentgym train|eval|serve`` line in a bash block of
    the README, docs/ and the benchmark pages, with the block's shell variables filled in."""
    files = [ROOT / "README.md", ROOT / "BENCHMARKS.md", *sorted((ROOT / "docs").rglob("*.md"))]
    files += sorted((ROOT / "benchmarks" / "results").glob("*.md"))
    found = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        for block in re.findall(r"```(?:bash|sh|console)\n(.*?)```", text, re.DOTALL):
            variables: dict[str, str] = {}
            for line in block.replace("\\\n", " ").splitlines():
                try:
                    words = shlex.split(line, comments=True)
                except ValueError:  # a quote spanning lines (printf input): not a command
                    continue
                while words and re.fullmatch(r"[A-Z]\w*=.*", words[0]):
                    name, _, value = words.pop(0).partition("=")
                    variables[name] = value
                if (
                    words[:1] == ["agentgym"]
                    and words[1:2]
                    and words[1] in ("train", "eval", "serve")
                ):
                    found.append((path.relative_to(ROOT).as_posix(), _command(line, variables)))
    return found


def _command(line: str, variables: dict[str, str]) -> str:
    """The first command of a shell line (up to ``&``, ``|``, ``;`` or a redirection), with
    ``$NAME`` and ``"$NAME"`` replaced by the block's values."""
    line = re.sub(r'"\$(\w+)"', lambda m: shlex.quote(variables[m.group(1)]), line)
    line = re.sub(r"\$(\w+)", lambda m: variables[m.group(1)], line)
    words = shlex.split(line, comments=True)
    ends = [i for i, w in enumerate(words) if w in ("&", "&&", "|", "||", ";") or w[0] in "<>"]
    return shlex.join(words[: ends[0]] if ends else words)


DOCUMENTED = _documented_commands()


def test_the_docs_hold_the_commands_this_checks():
    commands = [c.split()[1] for _, c in DOCUMENTED]
    assert commands.count("train") >= 20 and commands.count("eval") >= 5, commands


@pytest.mark.parametrize(
    ("path", "command"), DOCUMENTED, ids=[f"{p}:{c[:40]}" for p, c in DOCUMENTED]
)
def test_every_documented_command_still_parses(path, command):
    argv = shlex.split(command)[1:]
    args = PARSER.parse_args(argv)  # a renamed or dropped flag exits 2 here
    builder = {"train": cmd_train.train_config, "eval": cmd_eval.eval_config}.get(argv[0])
    if builder is not None:
        builder(args)  # and its JSON values are objects


def test_commands_that_generate_no_flags_import_no_torch():
    """Flags generated from ``TrainConfig`` (whose module imports torch) are added when
    ``train`` parses, so ``agentgym list`` starts without torch, and works without it."""
    code = (
        "import sys; from agentgym.cli import main; "
        "assert main(['list', '--family', 'games']) == 0; "
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_serve_token_is_read_when_the_server_starts_not_when_flags_are_built(monkeypatch):
    monkeypatch.setenv("AGENTGYM_SERVE_TOKEN", "secret-1")
    cfg = cmd_serve.config_flags().config(_parse("serve", ENV))
    assert cfg.token is None and cfg.resolved_token() == "secret-1"
    assert (
        "secret-1"
        not in build_parser()._subparsers._group_actions[0].choices["serve"].format_help()
    )
    given = cmd_serve.config_flags().config(_parse("serve", ENV, "--token", "t2"))
    assert given.resolved_token() == "t2"
    monkeypatch.delenv("AGENTGYM_SERVE_TOKEN")
    assert cfg.resolved_token() is None


@pytest.mark.parametrize("module", ["agentgym.cli.from_config", "agentgym.evaluation"])
def test_docstring_examples(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0
