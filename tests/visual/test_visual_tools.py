"""The visual tools: real image operations, bounded outputs, errors instead of exceptions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from agentgym.simulators.visual.calc import CalcError, calculate
from agentgym.simulators.visual.tasks import generate
from agentgym.simulators.visual.tools import MAX_OUTPUT_SIDE, TOOLS, run_tool
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


@pytest.fixture(scope="module")
def scene():
    return generate("objects", seed=3, difficulty="medium")


@pytest.mark.parametrize(
    "name, args, fragment",
    [
        ("zoom", {"box": [float("nan"), 0, 10, 10]}, "finite"),
        ("zoom", {"box": [0, 0, float("inf"), 10]}, "finite"),
        ("zoom", {"box": [50, 50, 50, 80]}, "zero or negative area"),
        ("zoom", {"box": [60, 50, 40, 80]}, "zero or negative area"),
        ("zoom", {"box": [-500, -500, -100, -100]}, "outside the image"),
        ("zoom", {"box": [5000, 10, 6000, 20]}, "outside the image"),
        ("zoom", {"box": [10, 10, 10.1, 10.1]}, "too small"),
        ("zoom", {"box": [0, 0, 10, 10], "scale": 1e9}, "scale must be"),
        ("zoom", {"box": [0, 0, 10, 10], "scale": -2}, "scale must be"),
        ("zoom", {"box": [0, 0, 10, 10], "scale": 0}, "scale must be"),
        ("ocr", {"box": [1, 2, 3]}, "[x0, y0, x1, y1]"),
        ("enhance", {"box": [0, 0, 50, 50], "contrast": 100}, "contrast"),
        ("measure", {"points": [[0, 0], [1e9, 0]]}, "outside the image"),
        ("measure", {"points": [[5, 5], [5, 5], [9, 9]]}, "coincides"),
        ("draw", {"grid": 1}, "at least 10"),
        ("draw", {"lines": [[0, 0, 1e12, 5]]}, "far outside"),
        ("ground", {"query": "the of a"}, "describe an object"),
        ("calculate", {"expression": "__import__('os').system('true')"}, "not allowed"),
        ("calculate", {"expression": "9**9**9"}, "powers are limited"),
        ("calculate", {"expression": "1/0"}, "division by zero"),
        ("nope", {}, "unknown tool"),
        ("zoom", {"bbox": [0, 0, 5, 5]}, "bad arguments"),
    ],
)
def test_bad_arguments_give_a_tool_error_not_an_exception(scene, name, args, fragment):
    result = run_tool(scene, name, args)
    assert not result.ok
    assert fragment in result.error
    assert result.image is None


def test_zoom_shows_source_pixels_of_the_box(scene):
    s = scene.scale
    result = run_tool(scene, "zoom", {"box": [100, 100, 150, 140], "scale": s})
    assert result.ok and result.image.shape == (40 * s, 50 * s, 3)
    source = np.asarray(scene.image.crop((100 * s, 100 * s, 150 * s, 140 * s)))
    assert np.array_equal(result.image, source)


def test_zoom_output_is_bounded_and_clipped_boxes_are_reported(scene):
    huge = run_tool(scene, "zoom", {"box": [-100, -100, 10_000, 10_000], "scale": 32})
    assert huge.ok and max(huge.image.shape[:2]) <= MAX_OUTPUT_SIDE
    assert "clipped" in huge.text and "capped" in huge.text
    tiny = run_tool(scene, "zoom", {"box": [10, 10, 11, 11]})
    assert tiny.ok and max(tiny.image.shape[:2]) <= 256


def test_every_image_tool_returns_bounded_rgb(scene):
    calls = {
        "zoom": {"box": [0, 0, 640, 480]},
        "rotate": {"box": [0, 0, 640, 480], "angle": 45},
        "enhance": {"box": [0, 0, 640, 480], "contrast": 8, "sharpen": True, "invert": True},
        "draw": {"grid": 10, "marks": [[5, 5]], "lines": [[0, 0, 640, 480]]},
        "ground": {"query": scene.objects[0].label},
    }
    for name, args in calls.items():
        result = run_tool(scene, name, args)
        assert result.ok, result.error
        assert result.image.dtype == np.uint8 and result.image.shape[2] == 3
        assert max(result.image.shape[:2]) <= MAX_OUTPUT_SIDE


def test_ground_returns_exactly_the_matching_scene_objects(scene):
    label = scene.objects[0].label  # e.g. "red triangle"
    expected = sum(o.label == label for o in scene.objects)
    result = run_tool(scene, "ground", {"query": f"all {label}s"})
    assert result.text.startswith(f"Found {expected} region")
    assert run_tool(scene, "ground", {"query": "unicorn"}).text.startswith("No region")


def test_ground_noise_is_deterministic_and_perturbs(scene):
    label = scene.objects[0].label
    exact = run_tool(scene, "ground", {"query": label}).text
    a = run_tool(scene, "ground", {"query": label}, noise=0.5, seed=1).text
    b = run_tool(scene, "ground", {"query": label}, noise=0.5, seed=1).text
    assert a == b and a != exact


def test_measure_distance_and_angle(scene):
    d = run_tool(scene, "measure", {"points": [[10, 10], [13, 14]]})
    assert "5.00 view px" in d.text and f"{5 * scene.scale:.1f} source px" in d.text
    a = run_tool(scene, "measure", {"points": [[20, 10], [10, 10], [10, 30]]})
    assert "90.00 degrees" in a.text


def test_color_stats_names_the_colour_of_a_shape(scene):
    obj = next(o for o in scene.objects if o.kind == "square")
    x0, y0, x1, y1 = scene.to_view(obj.box)
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    result = run_tool(scene, "color_stats", {"box": [cx - 1, cy - 1, cx + 1, cy + 1]})
    assert f"main colours: {obj.attrs['color']} " in result.text


@pytest.mark.parametrize(
    "expression, value",
    [
        ("(17 + 25) * 2", 84),
        ("sqrt(3**2 + 4**2)", 5.0),
        ("round(cos(60), 6)", 0.5),
        ("-2**2", -4),
        ("7 // 2 + 7 % 2", 4),
    ],
)
def test_calculator_evaluates_arithmetic(expression, value):
    assert math.isclose(calculate(expression), value)


@pytest.mark.parametrize(
    "expression", ["x + 1", "().__class__", "[1, 2]", "lambda: 1", "", "1" * 400, "10**400.0"]
)
def test_calculator_rejects_everything_else(expression):
    with pytest.raises(CalcError):
        calculate(expression)


def test_tool_schemas_are_openai_function_schemas():
    for tool in TOOLS.values():
        spec = tool.to_openai()
        assert spec["type"] == "function" and spec["function"]["parameters"]["type"] == "object"
        assert spec["function"]["description"]


_NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=-50, max_value=700),
    st.integers(min_value=-(10**12), max_value=10**12),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.sampled_from(["zoom", "rotate", "enhance", "color_stats", "ground"]),
    box=st.lists(_NUMBERS, min_size=0, max_size=6),
    extra=_NUMBERS,
)
def test_fuzzed_arguments_never_raise_and_outputs_stay_bounded(scene, name, box, extra):
    args = {
        "zoom": {"box": box, "scale": extra},
        "rotate": {"box": box, "angle": extra},
        "enhance": {"box": box, "contrast": extra},
        "color_stats": {"box": box},
        "ground": {"query": f"red {extra}"},
    }[name]
    result = run_tool(scene, name, args, noise=0.9, seed=5)
    assert result.ok or result.error
    if result.image is not None:
        assert max(result.image.shape[:2]) <= MAX_OUTPUT_SIDE
