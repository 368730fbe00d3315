"""Missing system parts are reported as the host's problem, never as the agent's (issue 18.3).

Without tesseract the visual envs used to count every OCR call as a format penalty, so the
oracle fell to 0% with no warning. Now the env warns once, reports ``info["system_error"]``
with the fix and keeps the turn valid; ``agentgym doctor`` checks every part each family
needs and prints the fix for each.
"""

from __future__ import annotations

import json
import warnings

import gymnasium as gym
import pytest

from agentgym.cli import main


@pytest.fixture()
def no_tesseract(monkeypatch: pytest.MonkeyPatch):
    """A host whose tesseract binary is gone (pytesseract points at a missing path)."""
    import pytesseract
    from agentgym.simulators.visual import ocr

    monkeypatch.setattr(pytesseract.pytesseract, "tesseract_cmd", "/nonexistent/tesseract")
    monkeypatch.setattr(ocr, "_warned", False, raising=False)
    ocr.tesseract_version.cache_clear()
    yield
    ocr.tesseract_version.cache_clear()


def test_missing_tesseract_is_a_warning_and_info_not_a_format_penalty(no_tesseract) -> None:
    env = gym.make("agentgym/VisualDoc-v0")
    try:
        env.reset(seed=0)
        ocr_steps = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(4):
                action = env.unwrapped.oracle_action()
                _, _, terminated, truncated, info = env.step(action)
                assert info["action_valid"], info["error"]
                assert info["reward_components"].get("format", 0.0) == 0.0
                if '"ocr"' in action:
                    ocr_steps.append(info)
                if terminated or truncated:
                    break
        assert ocr_steps, "the oracle never called ocr"
        assert "apt-get install tesseract-ocr" in ocr_steps[0]["system_error"]
        assert all(s["reward_components"].get("redundant", 0.0) == 0.0 for s in ocr_steps)
        messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
        assert len([m for m in messages if "OCR is unavailable" in m]) == 1
    finally:
        env.close()


def test_doctor_checks_every_familys_parts(capsys) -> None:
    main(["doctor", "--json"])
    report = json.loads(capsys.readouterr().out)
    parts = report["parts"]
    assert {"bubblewrap", "chromium", "playwright", "fonts", "tesseract", "torch"} <= set(parts)
    for part in parts.values():
        assert part["fix"], part
    assert report["parts_missing"] == [name for name, p in parts.items() if not p["ok"]]


def test_doctor_prints_the_fix_for_a_missing_tesseract(no_tesseract, capsys) -> None:
    main(["doctor"])
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if "tesseract (visual)" in line)
    assert "[MISSING]" in line
    assert "fix: apt-get install tesseract-ocr" in out


def test_doctor_names_a_broken_agentgym_chromium(monkeypatch, capsys, tmp_path) -> None:
    monkeypatch.setenv("AGENTGYM_CHROMIUM", str(tmp_path / "no-chrome"))
    main(["doctor", "--json"])
    chromium = json.loads(capsys.readouterr().out)["parts"]["chromium"]
    assert not chromium["ok"] and "AGENTGYM_CHROMIUM" in chromium["detail"]
