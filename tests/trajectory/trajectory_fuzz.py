"""Damaged ``.agtr`` files made from real recordings, for the CLI fuzz test.

:func:`damaged_file` turns one of a few real recordings into a damaged copy, deterministically
from an index: raw byte damage (flipped bytes, truncation, splices from another recording,
zeroed or repeated ranges) and payload damage that keeps every checksum valid (fields set to
values of the wrong type, fields removed, frames that are not maps, frames dropped,
duplicated, reordered or given another episode's id), sometimes both.
"""

from __future__ import annotations

import copy
import math
import random
from collections.abc import Callable, Sequence
from typing import Any

import msgpack
import numpy as np

from agentgym.trajectory import format as fmt

JUNK: tuple[Any, ...] = (
    "abc",
    "",
    None,
    5,
    -1,
    0,
    2**63,
    -(2**63),
    1.5,
    math.nan,
    math.inf,
    True,
    False,
    [],
    [1, "x", None],
    {},
    {"a": None},
    {1: 2},
    {b"k": [b"v"]},
    b"\x00\xff",
    np.zeros(3),
    np.arange(6, dtype=np.int16).reshape(2, 3),
    msgpack.ExtType(9, b"future"),
    [[[[[[[[["deep"]]]]]]]]],
    "x" * 5000,
)
"""Values of every msgpack kind, to put where another kind belongs."""

FIELD_NAMES = (
    "type",
    "episode_id",
    "step",
    "action",
    "reward",
    "return",
    "success",
    "terminated",
    "truncated",
    "observation",
    "messages",
    "tools",
    "tool_calls",
    "reward_components",
    "info",
    "timings",
    "seed",
    "task_id",
    "env_id",
    "env_kwargs",
    "options",
    "system_prompt",
    "error",
    "termination",
    "length",
    "model_output",
    "action_valid",
)


def _junk(rng: random.Random) -> Any:
    return copy.deepcopy(rng.choice(JUNK))


def _set_field(frames: list[dict], rng: random.Random) -> str:
    frame = rng.choice(frames)
    keys = list(frame) + list(FIELD_NAMES)
    key = rng.choice(keys)
    frame[key] = _junk(rng)
    return f"set {frame.get('type')!r}.{key}"


def _nested(frames: list[dict], rng: random.Random) -> str:
    """Damage inside observation / images / messages / tools / components."""
    frame = rng.choice(frames)
    obs = frame.get("observation")
    choice = rng.randrange(6)
    if choice == 0 and isinstance(obs, dict):
        images = obs.get("images") or []
        if images and isinstance(images[0], dict):
            key = rng.choice(["png", "sha256", "shape", "extra"])
            images[0][key] = _junk(rng)
            return f"image.{key}"
        obs["images"] = [_junk(rng)]
        return "image entry"
    if choice == 1 and isinstance(obs, dict):
        obs[rng.choice(["text", "images"])] = _junk(rng)
        return "observation field"
    if choice == 2 and isinstance(frame.get("messages"), list):
        frame["messages"].append(
            rng.choice([_junk(rng), {"role": _junk(rng), "content_ref": _junk(rng)}])
        )
        return "message entry"
    if choice == 3:
        frame["tools"] = [{"function": _junk(rng)}, _junk(rng)]
        return "tools"
    if choice == 4:
        frame["reward_components"] = {rng.choice(["outcome", 1, "x"]): _junk(rng)}
        return "reward component"
    frame["tool_calls"] = [{"name": _junk(rng), "arguments": _junk(rng)}, _junk(rng)]
    return "tool calls"


def _remove_field(frames: list[dict], rng: random.Random) -> str:
    frame = rng.choice(frames)
    if frame:
        key = rng.choice(list(frame))
        del frame[key]
        return f"removed {key}"
    return "nothing"


def _structure(frames: list[dict], rng: random.Random) -> str:
    if len(frames) < 2:
        return "nothing"
    i = rng.randrange(len(frames))
    choice = rng.randrange(5)
    if choice == 0:
        del frames[i]
        return "dropped a frame"
    if choice == 1:
        frames.insert(rng.randrange(len(frames) + 1), copy.deepcopy(frames[i]))
        return "duplicated a frame"
    if choice == 2:
        j = rng.randrange(len(frames))
        frames[i], frames[j] = frames[j], frames[i]
        return "swapped frames"
    if choice == 3:
        ids = [f.get("episode_id") for f in frames if "episode_id" in f]
        if ids:
            frames[i]["episode_id"] = rng.choice(ids)
        return "moved a frame to another episode"
    frames[i]["type"] = rng.choice(["header", "episode_start", "step", "episode_end", "future"])
    return "changed a frame's type"


PAYLOAD_MUTATIONS: tuple[Callable[[list[dict], random.Random], str], ...] = (
    _set_field,
    _set_field,
    _nested,
    _nested,
    _remove_field,
    _structure,
)


def reframe(frames: Sequence[Any]) -> bytes:
    """A file whose frames hold ``frames`` (anything msgpack encodes) with valid CRCs."""
    parts = [fmt.preamble_bytes()]
    parts += [fmt.frame_bytes(fmt.pack(f)) for f in frames]
    return b"".join(parts)


def _byte_damage(data: bytes, other: bytes, rng: random.Random) -> tuple[bytes, str]:
    buf = bytearray(data)
    choice = rng.randrange(6)
    if choice == 0:
        for _ in range(rng.randint(1, 20)):
            buf[rng.randrange(len(buf))] ^= rng.randint(1, 255)
        return bytes(buf), "flipped bytes"
    if choice == 1:
        return bytes(buf[: rng.randrange(len(buf) + 1)]), "truncated"
    if choice == 2:
        a = rng.randrange(len(other))
        piece = other[a : a + rng.randint(1, 4096)]
        at = rng.randrange(len(buf) + 1)
        return bytes(buf[:at]) + piece + bytes(buf[at:]), "spliced in another recording"
    if choice == 3:
        a = rng.randrange(len(buf))
        b = min(len(buf), a + rng.randint(1, 2048))
        a2 = rng.randrange(len(other))
        return bytes(buf[:a]) + other[a2 : a2 + (b - a)] + bytes(buf[b:]), "overwrote a range"
    if choice == 4:
        a = rng.randrange(len(buf))
        b = min(len(buf), a + rng.randint(1, 512))
        buf[a:b] = bytes(b - a)
        return bytes(buf), "zeroed a range"
    a = rng.randrange(len(buf))
    b = min(len(buf), a + rng.randint(1, 4096))
    return bytes(buf[:b]) + bytes(buf[a:b]) + bytes(buf[b:]), "repeated a range"


def damaged_file(
    index: int, recordings: Sequence[bytes], frames: Sequence[list[dict]]
) -> tuple[bytes, str]:
    """The ``index``-th damaged file and a description of what was done to it.

    ``recordings`` are the raw bytes of real recordings and ``frames`` their decoded frames.
    """
    rng = random.Random(index)
    k = rng.randrange(len(recordings))
    other = recordings[(k + 1) % len(recordings)]
    kind = index % 4
    if kind == 0:
        data, what = _byte_damage(recordings[k], other, rng)
        return data, what
    mutated = copy.deepcopy(frames[k])
    what = [rng.choice(PAYLOAD_MUTATIONS)(mutated, rng) for _ in range(rng.randint(1, 4))]
    payloads: list[Any] = list(mutated)
    if rng.random() < 0.1:  # a payload that is not a map at all
        payloads.insert(rng.randrange(1, len(payloads) + 1), _junk(rng))
        what.append("non-map payload")
    data = reframe(payloads)
    if kind == 3:
        data, more = _byte_damage(data, other, rng)
        what.append(more)
    return data, "; ".join(what)
