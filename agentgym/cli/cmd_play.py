"""``agentgym play ID``: play an env yourself at the terminal, one turn at a time.

Each turn shows what the model would see (the system prompt at the start, then the
observation) and a menu: the admissible actions when the env lists them, one entry per tool
(you are then asked for each argument, with its type, its choices and whether it is
required), and, for envs that end with an ``<answer>``, an entry that asks for the answer.
Pick a number, or type a whole turn as a model would write it (``<tool_call>{...}</tool_call>``,
``<answer>...</answer>`` or any text: the env judges it exactly as it judges a model).
After each turn it prints the env's reply, the reward and its components.

Commands at the prompt: ``:q`` quits, ``:r`` restarts the episode, ``:h`` shows this help.
Images are saved as PNG files with ``--images DIR`` (a terminal cannot show them).
Input is read line by line from stdin, so a file of turns can be piped in.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from agentgym.cli.args import check_env_args, json_object, non_negative_int, positive_int
from agentgym.parsing import render_answer, render_tool_call

HELP = (
    "Pick a number from the menu, or type a turn as a model would write it "
    "(<tool_call>{...}</tool_call>, <answer>...</answer> or any text). "
    ":q quits, :r restarts the episode, :h shows this help."
)

Ask = Callable[[str], str]


class _Quit(Exception):
    """The player typed :q (or stdin ended)."""


class _Restart(Exception):
    """The player typed :r."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "play",
        help="play an env yourself at the terminal (tool calls from a menu or typed)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("env_id", metavar="ID", help="a registered id, e.g. agentgym/Sokoban-Tiny-v0")
    p.add_argument("--seed", type=non_negative_int, default=0, help="the first episode's seed")
    p.add_argument("--task-id", default=None, help="play this task (overrides the seed's choice)")
    p.add_argument("--split", default=None, help="the task split, e.g. test (default: train)")
    p.add_argument("--episodes", type=positive_int, default=1, help="episodes to play")
    p.add_argument("--env-kwargs", default="{}", help="JSON keyword arguments for gym.make")
    p.add_argument("--images", default=None, metavar="DIR", help="save observation images here")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from agentgym.registry import make

    kwargs = json_object(args.env_kwargs)
    if args.split is not None:
        kwargs["split"] = args.split
    record = check_env_args(args.env_id, kwargs, "play")
    env = make(record.id, **kwargs)
    ask = _reader()
    played = won = 0
    try:
        for k in range(args.episodes):
            result = _episode(env, record.id, args.seed + k, args.task_id, ask, args.images)
            played += 1
            won += bool(result)
    except _Quit:
        print("\nquit.")
    finally:
        env.close()
    print(f"played {played} episode(s); {won} succeeded.")
    return 0


def _reader() -> Ask:
    """``input`` that turns the end of stdin into a quit."""

    def ask(prompt: str) -> str:
        try:
            return input(prompt)
        except EOFError:
            raise _Quit from None

    return ask


def _episode(
    env: Any, env_id: str, seed: int, task_id: str | None, ask: Ask, images: str | None
) -> bool:
    """Play one episode (restarting it on ``:r``); True when it ended in success."""
    options = {"task_id": task_id} if task_id else None
    while True:
        obs, info = env.reset(seed=seed, options=options)
        print(f"\n=== {env_id}  task {info.get('task_id')}  (seed {seed})")
        if info.get("system_prompt"):
            print(f"--- system prompt ---\n{info['system_prompt']}\n---------------------")
        _show(obs, images, f"seed{seed}-turn0")
        try:
            return _turns(env, info, ask, images, seed)
        except _Restart:
            print("restarting the episode.")


def _turns(env: Any, info: Mapping[str, Any], ask: Ask, images: str | None, seed: int) -> bool:
    tools = list(info.get("tools") or [])
    answers = bool(getattr(env.unwrapped, "answers_in_text", False))
    total, turn = 0.0, 0
    while True:
        menu = _menu(info.get("admissible_actions") or [], tools, answers)
        action = _choose(menu, ask, turn, getattr(env.unwrapped, "max_turns", None))
        obs, reward, terminated, truncated, info = env.step(action)
        turn += 1
        total += reward
        _show(obs, images, f"seed{seed}-turn{turn}")
        print(_reward_line(reward, info))
        if terminated or truncated:
            success = bool(info.get("success"))
            end = "success" if success else ("out of turns" if truncated else "failed")
            print(f"episode over after {turn} turn(s): {end}, return {total:+.3f}")
            return success


Menu = list[tuple[str, Callable[[Ask], str]]]


def _menu(admissible: Sequence[str], tools: Sequence[Mapping[str, Any]], answers: bool) -> Menu:
    """``(label, make_action)`` entries: admissible actions, then tools, then the answer."""
    entries: Menu = [(str(a), partial(_fixed, str(a))) for a in admissible]
    for tool in tools:
        fn = tool.get("function", tool)
        params = (fn.get("parameters") or {}).get("properties") or {}
        label = f"call {fn['name']}({', '.join(params)})"
        if fn.get("description"):
            label += f": {_first_sentence(str(fn['description']))}"
        entries.append((label, partial(_tool_call, fn)))
    if answers:
        entries.append(("answer: give the final answer", _answer))
    return entries


def _fixed(action: str, ask: Ask) -> str:
    """A menu entry that is a ready action (an admissible one): nothing to ask."""
    return action


def _first_sentence(text: str, limit: int = 90) -> str:
    """The first sentence of a tool's description, cut at ``limit`` characters."""
    first = text.split(". ", 1)[0].rstrip(".")
    return first if len(first) <= limit else first[: limit - 3] + "..."


def _choose(menu: Menu, ask: Ask, turn: int, max_turns: int | None) -> str:
    budget = f" of {max_turns}" if max_turns else ""
    print(f"\nturn {turn + 1}{budget}; choose:")
    for i, (label, _) in enumerate(menu, 1):
        print(f"  {i}) {label}")
    print("  or type a turn as a model would write it (:h help, :r restart, :q quit)")
    while True:
        line = ask("> ").strip()
        if line in (":q", ":quit"):
            raise _Quit
        if line in (":r", ":restart"):
            raise _Restart
        if line in (":h", ":help", "?"):
            print(HELP)
            continue
        if line.isdigit() and 1 <= int(line) <= len(menu):
            action = menu[int(line) - 1][1](ask)
            print(f"-> {action}")  # the turn as the model would have written it
            return action
        if line:
            return line
        print(f"(an empty turn: pick 1-{len(menu)} or type a turn)" if menu else HELP)


def _answer(ask: Ask) -> str:
    return render_answer(ask("  answer: ").strip())


def _tool_call(fn: Mapping[str, Any], ask: Ask) -> str:
    """Ask for each argument of tool ``fn``; the call as the model would write it."""
    schema = fn.get("parameters") or {}
    required = set(schema.get("required") or [])
    arguments: dict[str, Any] = {}
    for name, spec in (schema.get("properties") or {}).items():
        hint = _hint(spec, name in required)
        while True:
            text = ask(f"  {name} ({hint}): ").strip()
            if text or name not in required:
                break
            print(f"  {name} is required.")
        if text:
            arguments[name] = _value(text, spec)
    return render_tool_call(str(fn["name"]), arguments)


def _hint(spec: Mapping[str, Any], required: bool) -> str:
    kind = spec.get("type", "any")
    parts = ["/".join(kind) if isinstance(kind, list) else str(kind)]
    if spec.get("enum"):
        parts.append("one of: " + ", ".join(map(str, spec["enum"])))
    if "minimum" in spec or "maximum" in spec:
        parts.append(f"{spec.get('minimum', '')}..{spec.get('maximum', '')}")
    parts.append("required" if required else "optional, Enter to leave out")
    return "; ".join(parts)


def _value(text: str, spec: Mapping[str, Any]) -> Any:
    """The typed value of ``text`` for a JSON-schema property; the text itself when it does
    not read as that type (the env then explains what was wrong, as it would to a model)."""
    kind = spec.get("type")
    kinds = set(kind) if isinstance(kind, list) else {kind}
    if "boolean" in kinds and text.lower() in ("y", "yes", "true", "n", "no", "false"):
        return text.lower() in ("y", "yes", "true")
    if "string" in kinds and (spec.get("enum") is None or text in spec["enum"]):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _show(obs: Mapping[str, Any], images: str | None, stem: str) -> None:
    print(obs.get("text", ""))
    pictures = obs.get("images") or ()
    if not pictures:
        return
    if images is None:
        print(f"[{len(pictures)} image(s): pass --images DIR to save them as PNG files]")
        return
    from PIL import Image

    folder = Path(images)
    folder.mkdir(parents=True, exist_ok=True)
    for i, picture in enumerate(pictures):
        path = folder / f"{stem}-{i}.png"
        Image.fromarray(picture).save(path)
        print(f"[image saved to {path}]")


def _reward_line(reward: float, info: Mapping[str, Any]) -> str:
    parts = ", ".join(f"{k} {v:+.2f}" for k, v in (info.get("reward_components") or {}).items())
    line = f"reward {reward:+.3f} ({parts})"
    if info.get("action_valid") is False:
        line += f"; invalid turn: {info.get('error')}"
    return line
