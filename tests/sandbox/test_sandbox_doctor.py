"""``agentgym doctor`` names every layer and exits non-zero when a required one is missing."""

from __future__ import annotations

import json

import pytest
from agentgym.simulators.sandbox import layers

from agentgym.cli import main

pytestmark = [pytest.mark.sandbox]


def test_doctor_lists_layers(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["doctor", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert set(out["layers"]) == set(layers.LAYER_DOCS)
    missing = [n for n in layers.REQUIRED if not out["layers"][n]["active"]]
    assert out["required_missing"] == missing
    assert code == (1 if missing else 0)


def test_doctor_reports_missing_layer(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = dict(layers.detect_layers())
    fake["seccomp"] = layers.Layer("seccomp", False, "pyseccomp unusable")
    monkeypatch.setattr(layers, "detect_layers", lambda: fake)
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "[MISSING] seccomp" in out and "REFUSE" in out
