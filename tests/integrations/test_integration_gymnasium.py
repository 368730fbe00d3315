"""Gymnasium's own vector envs and flatten wrapper at their defaults over agentgym ids.

On 11f859c ``AsyncVectorEnv`` (default ``shared_memory=True``) and
``gym.make_vec(..., vectorization_mode="async")`` failed with ``CustomSpaceError`` for
``UnicodeText``, and ``FlattenObservation`` with ``Unknown space: RGBImages``.
"""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
from gymnasium.spaces.utils import flatten, unflatten
from gymnasium.vector import AsyncVectorEnv
from gymnasium.vector.utils import (
    batch_differing_spaces,
    batch_space,
    concatenate,
    create_empty_array,
    iterate,
)

import agentgym
from agentgym import space_utils
from agentgym.parsing import render_tool_call
from agentgym.spaces import observation_space

TEXT_ID = "agentgym/Sokoban-Tiny-v0"
VISUAL_ID = "agentgym/VisualClock-v0"
UP = render_tool_call("move", {"direction": "up"})


def _direct(env_id: str, seed: int, actions: list[str]) -> list[dict]:
    env = gym.make(env_id)
    obs, _ = env.reset(seed=seed)
    out = [obs]
    for action in actions:
        out.append(env.step(action)[0])
    env.close()
    return out


def _same(a: dict, b: dict) -> bool:
    return (
        a["text"] == b["text"]
        and len(a["images"]) == len(b["images"])
        and all(np.array_equal(x, y) for x, y in zip(a["images"], b["images"], strict=True))
    )


def _check_against_direct(vec: gym.vector.VectorEnv, env_id: str, actions: list[str]) -> None:
    obs, _ = vec.reset(seed=[11, 12])
    history = [obs]
    for action in actions:
        obs, rewards, *_ = vec.step((action, action))
        assert rewards.shape == (2,)
        history.append(obs)
    for i, seed in enumerate([11, 12]):
        expected = _direct(env_id, seed, actions)
        for step, batch in enumerate(history):
            got = {"text": batch["text"][i], "images": batch["images"][i]}
            assert _same(got, expected[step]), (env_id, i, step)


def test_async_vector_env_defaults_text_env_matches_direct_play():
    vec = AsyncVectorEnv([lambda: gym.make(TEXT_ID)] * 2)
    assert vec.shared_memory  # Gymnasium's default, which failed before
    try:
        _check_against_direct(vec, TEXT_ID, [UP, "not a tool call", UP])
    finally:
        vec.close()


def test_make_vec_async_visual_env_keeps_images_exact():
    vec = gym.make_vec(VISUAL_ID, num_envs=2, vectorization_mode="async")
    try:
        obs, _ = vec.reset(seed=[11, 12])
        assert all(len(images) == 1 and images[0].ndim == 3 for images in obs["images"])
        _check_against_direct(vec, VISUAL_ID, ["<answer>3:15</answer>"])
    finally:
        vec.close()


def test_large_observations_spill_past_the_inline_buffer_losslessly(monkeypatch):
    # A screenshot (~1 MB) and a long prompt go past a tiny inline buffer: they take the
    # tmpfs path and must still arrive byte for byte.
    monkeypatch.setattr(space_utils, "INLINE_IMAGE_BYTES", 1000)
    monkeypatch.setattr(space_utils, "INLINE_TEXT_BYTES", 16)
    vec = AsyncVectorEnv([lambda: gym.make(VISUAL_ID)] * 2)
    try:
        _check_against_direct(vec, VISUAL_ID, ["<answer>1</answer>"])
    finally:
        vec.close()


def test_observations_returned_are_snapshots_not_live_views():
    vec = AsyncVectorEnv([lambda: gym.make(TEXT_ID)] * 2)
    try:
        first, _ = vec.reset(seed=[1, 2])
        kept = copy.deepcopy(first)
        vec.step((UP, UP))
        assert isinstance(first["text"], tuple) and first["text"] == kept["text"]
    finally:
        vec.close()


def test_any_unicode_text_survives_shared_memory_between_processes():
    import multiprocessing as mp

    ctx = mp.get_context("spawn")  # the worker unpickles the buffer, as under spawn/forkserver
    space = observation_space(max_text_length=200)
    memory = gym.vector.utils.create_shared_memory(space, n=2, ctx=ctx)
    text = "héllo <tool_call>{}</tool_call> 中文 😀 \x00 \ud800 end"
    images = (np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3),)

    proc = ctx.Process(
        target=gym.vector.utils.write_to_shared_memory,
        args=(space, 1, {"text": text, "images": images}, memory),
    )
    proc.start()
    proc.join(60)
    assert proc.exitcode == 0
    batch = gym.vector.utils.read_from_shared_memory(space, memory, n=2)
    assert batch["text"][1] == text and batch["text"][0] == ""
    assert batch["images"][0] == () and np.array_equal(batch["images"][1][0], images[0])


def test_batch_iterate_concatenate_over_the_observation_space():
    space = observation_space()
    space.seed(3)
    items = [space.sample() for _ in range(3)]
    batched = batch_space(space, 3)
    out = concatenate(space, items, create_empty_array(space, 3))
    assert out in batched
    for got, want in zip(iterate(batched, out), items, strict=True):
        assert _same(got, want)
    # envs whose bounds differ (observation_mode="different") batch too
    texts = [agentgym.spaces.UnicodeText(10), agentgym.spaces.UnicodeText(20)]
    mixed = batch_differing_spaces(texts)
    assert ("a" * 10, "b" * 20) in mixed and ("a" * 11, "b") not in mixed


def test_flatten_observation_wrapper_on_visual_env_is_lossless():
    env = gym.wrappers.FlattenObservation(gym.make(VISUAL_ID))
    obs, _ = env.reset(seed=4)
    assert obs in env.observation_space
    assert obs["text"].dtype == np.int32 and obs["images"][0].dtype == np.uint8
    raw = _direct(VISUAL_ID, 4, [])[0]
    assert _same(unflatten(env.env.observation_space, obs), raw)
    env.close()


def test_flatten_round_trips_arbitrary_text():
    space = agentgym.spaces.UnicodeText(64)
    for text in ["", "a b\n<x>", "中文😀\ud800"]:
        flat = flatten(space, text)
        assert flat.dtype == np.int32 and unflatten(space, flat) == text
