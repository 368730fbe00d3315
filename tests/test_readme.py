"""The README's Python examples run as written (from a scratch directory)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
RUNNABLE = [b for b in BLOCKS if "yourorg" not in b]


def test_readme_has_examples():
    assert len(RUNNABLE) >= 2


@pytest.mark.parametrize("code", RUNNABLE, ids=[f"block{i}" for i in range(len(RUNNABLE))])
def test_readme_python_block_runs(code, tmp_path):
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
