"""examples/gpu_check.py: one clear line and exit status 2 without a GPU; its code runs.

The real run needs a CUDA device (it is not run here); the dry run exercises the same code at
toy sizes on the CPU.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "gpu_check.py"


@pytest.mark.skipif(torch.cuda.is_available(), reason="the refusal is for machines without a GPU")
def test_without_a_gpu_it_refuses_with_one_line(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "no CUDA device" in lines[0] and "--dry-run" in lines[0]
    assert not (tmp_path / "out").exists()  # nothing was started


@pytest.mark.slow
def test_the_dry_run_measures_every_policy_and_trains(tmp_path: Path) -> None:
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import gpu_check
    finally:
        sys.path.remove(str(SCRIPT.parent))
    assert gpu_check.main(["--dry-run", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert report["device"] == "cpu"
    inference = report["inference"]
    assert len(inference) == 3 and any(name.startswith("hf Qwen2") for name in inference)
    for got in inference.values():
        assert [r["envs"] for r in got["runs"]] == [1, 2]
        assert all(r["tokens_per_s"] > 0 for r in got["runs"])
    rl = report["rl"]
    assert rl["sft"]["iterations"] == 1
    assert rl["gigpo"]["env_steps"] > 0
    assert rl["gigpo"]["heldout_before"]["test_episodes"] == 2
