"""An OCR call the budget refuses costs nothing: the budget is checked before the image is
prepared (issue 38).

A visual turn of four whole-page ``ocr`` calls cost 3-4 s of CPU even though three were
refused, because each refused call was cropped, rotated and upscaled at full resolution
before its cost was compared with the budget. Now the cost is computed from the box, the
angle and the scene's scale alone, and the image is prepared only for a call that runs.
"""

from __future__ import annotations

import gymnasium as gym
import pytest
from agentgym.simulators.visual import ocr as ocr_module
from agentgym.simulators.visual import tools
from agentgym.simulators.visual.ocr import fit_for_tesseract, fitted_size, ocr_cost
from agentgym.simulators.visual.tasks import generate
from agentgym.simulators.visual.tools import (
    _source_crop,
    ocr_cost_of,
    prepare_for_ocr,
    rotated_size,
    run_tool,
    view_box,
)
from PIL import Image

import agentgym  # noqa: F401
from agentgym.parsing import render_tool_call

PREPARATION = ("_source_crop", "prepare_for_ocr", "fit_for_tesseract")


@pytest.fixture
def prepared(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records every call into the preparation steps (crop, prepare, fit) of ``ocr``, the
    fit inside ``read_text`` included; ``prepare_for_ocr`` with its angle and enhance."""
    calls: list[str] = []
    for module, name in [(tools, n) for n in PREPARATION] + [(ocr_module, "fit_for_tesseract")]:
        real = getattr(module, name)

        def spy(*args, _real=real, _name=name, **kwargs):
            label = f"{_name}{tuple(args[1:])}" if _name == "prepare_for_ocr" else _name
            calls.append(label)
            return _real(*args, **kwargs)

        monkeypatch.setattr(module, name, spy)
    return calls


def test_a_refused_call_never_reaches_the_preparation(prepared: list[str]):
    scene = generate("doc", seed=0, difficulty="medium")
    page = [0, 0, *scene.view_size]
    result = run_tool(scene, "ocr", {"box": page, "angle": 30, "enhance": True}, ocr_budget_px=0)
    assert result.over_budget and result.cost == 0
    assert prepared == []
    # one pixel short of the call's cost: still refused, still nothing prepared
    cost = ocr_cost_of(scene, view_box(scene, page)[0], 30.0)
    result = run_tool(
        scene, "ocr", {"box": page, "angle": 30, "enhance": True}, ocr_budget_px=cost - 1
    )
    assert result.over_budget and prepared == []
    # a call that fits is prepared once, step by step, and charged what was predicted
    tight = [10, 10, 110, 40]
    allowed = ocr_cost_of(scene, view_box(scene, tight)[0], 0.0)
    result = run_tool(scene, "ocr", {"box": tight}, ocr_budget_px=allowed)
    assert not result.over_budget and result.cost == allowed
    assert prepared == ["_source_crop", "prepare_for_ocr(0.0, False)", "fit_for_tesseract"]
    # tesseract reads the image fitted once (no second margin); the angle is passed as given
    prepared.clear()
    run_tool(scene, "ocr", {"box": tight, "angle": -30, "enhance": True}, ocr_budget_px=None)
    assert prepared == ["_source_crop", "prepare_for_ocr(-30.0, True)", "fit_for_tesseract"]


def test_a_tesseract_timeout_is_an_error_the_agent_reads(monkeypatch: pytest.MonkeyPatch):
    scene = generate("doc", seed=0, difficulty="medium")
    monkeypatch.setattr(ocr_module, "TIMEOUT_S", 1e-6)  # the real binary, killed at once
    result = run_tool(scene, "ocr", {"box": [10, 10, 110, 40]})
    assert result.error is not None and result.system_error is None
    assert result.error.startswith("ocr: OCR is unavailable: OCR timed out after 0 s")


def test_a_turn_of_whole_page_calls_prepares_only_the_one_that_runs(prepared: list[str]):
    env = gym.make("agentgym/VisualDoc-v0")  # the default budgets
    env.reset(seed=0)
    page = [0, 0, *env.unwrapped.scene.view_size]
    calls = [
        render_tool_call("ocr", {"box": page, "angle": a, "enhance": True})
        for a in (10, 20, 30, 45)
    ]
    obs, *_ = env.step("\n".join(calls))
    results = [line for line in obs["text"].splitlines() if line.startswith("[")]
    assert sum("was not run" in line for line in results) == 3
    # once, for the call that ran
    assert prepared == ["_source_crop", "prepare_for_ocr(10.0, True)", "fit_for_tesseract"]

    refuse_all = gym.make("agentgym/VisualDoc-v0", ocr_episode_mpx=0)
    refuse_all.reset(seed=0)
    prepared.clear()
    refuse_all.step("\n".join(calls))
    assert prepared == []


ANGLES = [0.0, 90.0, 180.0, 270.0, 360.0, -90.0, 45.0, 10.0, 30.0, -30.0, 133.7, 359.9, 720.5]
CASES = [
    *[([10, 10, 110, 40], a) for a in ANGLES],  # a line of text
    *[([3.3, 7.7, 9.1, 11.9], a) for a in ANGLES],  # tiny: upscaled to tesseract's height
    *[([40, 5, 60, 300], a) for a in ANGLES],  # tall and thin
    # the whole page (clipped), turned far enough to pass tesseract's pixel cap
    *[([0, 0, 10_000, 10_000], a) for a in (0.0, 45.0, 90.0)],
]


@pytest.fixture(scope="module")
def page_scene():
    return generate("doc", seed=1, difficulty="hard")


@pytest.mark.parametrize(("box", "angle"), CASES)
def test_the_predicted_cost_is_what_tesseract_is_given(page_scene, box: list[float], angle: float):
    region = view_box(page_scene, box)[0]
    fitted = fit_for_tesseract(
        prepare_for_ocr(_source_crop(page_scene, region), angle % 360.0, False)
    )
    assert ocr_cost_of(page_scene, region, angle) == ocr_cost(fitted)


def test_enhance_does_not_change_the_cost():
    scene = generate("doc", seed=1, difficulty="hard")
    region = view_box(scene, [10, 10, 110, 40])[0]
    crop = _source_crop(scene, region)
    plain, enhanced = (fit_for_tesseract(prepare_for_ocr(crop, 30.0, e)) for e in (False, True))
    assert ocr_cost(plain) == ocr_cost(enhanced) == ocr_cost_of(scene, region, 30.0)


def test_the_whole_page_turned_is_shrunk_to_tesseracts_pixel_cap(page_scene):
    """The whole-page case above takes the shrink path (so it pins that arithmetic)."""
    region = view_box(page_scene, [0, 0, 10_000, 10_000])[0]
    turned = rotated_size(*page_scene.image.size, 45.0)
    fitted = fitted_size(*turned)
    inner = (fitted[0] - 2 * ocr_module.MARGIN) * (fitted[1] - 2 * ocr_module.MARGIN)
    assert inner <= ocr_module.MAX_PIXELS < turned[0] * turned[1]
    assert ocr_cost_of(page_scene, region, 45.0) == fitted[0] * fitted[1]


@pytest.mark.parametrize(
    "size",
    [(1, 1), (1, 2), (2, 3), (37, 11), (48, 47), (100, 48), (640, 480), (3000, 2001), (5, 4000)],
)
def test_rotated_and_fitted_sizes_match_pillow(size: tuple[int, int]):
    image = Image.new("L", size, 200)
    for angle in ANGLES:
        turned = image.rotate(angle % 360.0, expand=True) if angle % 360.0 else image
        assert rotated_size(*size, angle) == turned.size, (size, angle)
    assert fitted_size(*size) == fit_for_tesseract(image).size
    assert (
        ocr_module.ocr_cost(fit_for_tesseract(image))
        == fitted_size(*size)[0] * fitted_size(*size)[1]
    )
