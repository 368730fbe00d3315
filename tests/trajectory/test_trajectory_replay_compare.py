"""Replay's step comparison, called directly: which difference it reports first, and the
reward tolerance on both sides (relative to the larger magnitude, absolute below 1).
"""

from __future__ import annotations

import math

import numpy as np

from agentgym.trajectory.images import encode_image
from agentgym.trajectory.replay import _close, _compare_obs, _compare_step

REC = {
    "observation": {"text": "hello", "images": []},
    "reward": 1.0,
    "reward_components": {"outcome": 1.0, "format": 0.0},
    "terminated": True,
    "truncated": False,
    "info": {"success": True},
}
INFO = {"reward_components": {"outcome": 1.0, "format": 0.0}, "success": True}


def live(**change):
    values = {"obs": {"text": "hello", "images": ()}, "reward": 1.0, "terminated": True,
              "truncated": False, "info": dict(INFO)}  # fmt: skip
    values.update(change)
    return (values["obs"], values["reward"], values["terminated"], values["truncated"],
            values["info"])  # fmt: skip


def test_the_tolerance_is_relative_above_one_and_absolute_below():
    assert _close(100.0, 100.0002, 1e-6) is False  # 2e-4 > 1e-6 * 100
    assert _close(100.0, 100.00009, 1e-6) is True  # 9e-5 <= 1e-4
    assert _close(0.0, 1e-7, 1e-6) is True and _close(0.0, 2e-6, 1e-6) is False
    assert _close(-100.0, -100.00009, 1e-6) is True
    assert _close(math.nan, math.nan, 1e-6) is True and _close(math.nan, 0.0, 1e-6) is False


def test_an_identical_step_has_no_divergence():
    assert _compare_step(1, REC, live(), 1e-6) is None


def test_each_difference_is_reported_by_its_field():
    cases = [
        (live(obs={"text": "hullo", "images": ()}), "observation.text"),
        (live(reward=1.1), "reward"),
        (live(info={**INFO, "reward_components": {"outcome": 1.0}}), "reward_components"),
        (live(info={**INFO, "reward_components": {"outcome": 0.5, "format": 0.0}}),
         "reward_components"),
        (live(terminated=False), "terminated"),
        (live(truncated=True), "truncated"),
        (live(info={**INFO, "success": False}), "success"),
    ]  # fmt: skip
    for result, field in cases:
        div = _compare_step(3, REC, result, 1e-6)
        assert div is not None and (div.step, div.field) == (3, field), field
    assert (
        _compare_step(1, {**REC, "info": {}}, live(info={**INFO, "success": False}), 1e-6) is None
    )


def test_the_first_difference_wins():
    div = _compare_step(2, REC, live(reward=5.0, terminated=False), 1e-6)
    assert div.field == "reward" and (div.expected, div.got) == (1.0, 5.0)


def test_images_compare_by_shape_and_pixels():
    image = np.zeros((2, 3, 3), dtype=np.uint8)
    rec = {"text": "t", "images": [encode_image(image)]}
    assert _compare_obs(1, rec, {"text": "t", "images": (image.copy(),)}) is None
    other = image.copy()
    other[0, 0, 0] = 1
    div = _compare_obs(1, rec, {"text": "t", "images": (other,)})
    assert div is not None and div.field == "observation.images"
    assert _compare_obs(1, rec, {"text": "t", "images": ()}).field == "observation.images"
