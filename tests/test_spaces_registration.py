"""Where the agentgym spaces' handlers come from, now that ``spaces``, ``space_utils`` and the
Minari adapter no longer import each other (issue 33).

* Gymnasium's handlers (:mod:`agentgym.space_utils`) are registered by ``import agentgym``, so
  they exist whenever the spaces can be used, even when a program only imports
  ``agentgym.spaces``; ``spaces`` itself does not import them.
* Minari's serialisers (:func:`agentgym.integrations.minari.register_serializers`) are
  registered when ``minari.serialization`` is imported, after ``import agentgym`` or before
  it, and ``import agentgym`` alone loads neither Minari nor the integrations package.
* The byte forms of the values live with the spaces and round-trip exactly.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from agentgym import space_utils
from agentgym.spaces import decode_images, decode_text, encode_images, encode_text


def _fresh(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_importing_only_the_spaces_module_brings_gymnasiums_handlers():
    out = _fresh(
        "import sys\n"
        "from agentgym.spaces import UnicodeText\n"
        "from gymnasium.spaces.utils import flatten\n"
        "print(flatten(UnicodeText(8), 'ab').tolist(), 'agentgym.space_utils' in sys.modules)\n"
    )
    assert out == "[97, 98] True"


def test_the_spaces_module_itself_imports_no_handlers():
    import ast
    from pathlib import Path

    import agentgym.spaces as spaces

    tree = ast.parse(Path(spaces.__file__).read_text(encoding="utf-8"))
    names = [
        getattr(node, "module", None) or ""
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
    ] + [a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names]
    assert not [n for n in names if n.startswith("agentgym")]


@pytest.mark.parametrize("order", ["agentgym first", "minari first"])
def test_minari_serialisers_are_registered_whichever_is_imported_first(order):
    pytest.importorskip("minari")
    first, second = ("agentgym", "minari.serialization")
    if order == "minari first":
        first, second = second, first
    out = _fresh(
        "import json, sys\n"
        f"import {first}\nimport {second}\n"
        "import minari.serialization as ms\n"
        "from agentgym.spaces import RGBImages, UnicodeText\n"
        "text = ms.deserialize_space(ms.serialize_space(UnicodeText(7)))\n"
        "packed = ms.deserialize_space(json.dumps({'type': 'AgentGymPackedImages',\n"
        "    'max_images': 2, 'max_height': 3, 'max_width': 4}))\n"
        "try:\n"
        "    ms.serialize_space(RGBImages())\n"
        "except TypeError as exc:\n"
        "    refused = 'data_collector' in str(exc)\n"
        "print(text, type(packed).__name__, packed.images, refused)\n"
    )
    assert out == (
        "UnicodeText(max_length=7) PackedImages RGBImages(max_images=2, max_size=3x4) True"
    )


def test_import_agentgym_loads_neither_minari_nor_the_integrations():
    out = _fresh(
        "import sys, agentgym\n"
        "print(sorted(m for m in sys.modules if m == 'minari' or m.startswith('minari.')\n"
        "    or m.startswith('agentgym.integrations')))\n"
    )
    assert out == "[]"


def test_value_bytes_round_trip_exactly_and_space_utils_keeps_the_old_names():
    rng = np.random.default_rng(0)
    images = (rng.integers(0, 256, (3, 5, 3), dtype=np.uint8), np.zeros((1, 1, 3), np.uint8))
    back = decode_images(encode_images(images))
    assert len(back) == 2 and all(np.array_equal(a, b) for a, b in zip(images, back, strict=True))
    assert decode_images(encode_images(())) == ()
    assert decode_text(encode_text("a\ud800é")) == "a\ud800é"  # lone surrogates kept
    assert space_utils.encode_images is encode_images and space_utils.decode_text is decode_text
