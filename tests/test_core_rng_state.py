"""The generator state ``reset`` keeps for snapshots is a private copy, for every numpy bit
generator (dicts of ints for PCG64, Philox and SFC64; an array inside MT19937's)."""

from __future__ import annotations

import numpy as np
import pytest

from agentgym.core import _copied_state


@pytest.mark.parametrize(
    "bits", [np.random.PCG64, np.random.MT19937, np.random.Philox, np.random.SFC64]
)
def test_the_kept_state_equals_the_generator_state_and_shares_nothing(bits):
    generator = bits(11)
    generator.random_raw(3)
    state = generator.state
    copied = _copied_state(state)
    assert repr(copied) == repr(state)
    inner = copied["state"]
    for key, value in inner.items():  # mutate the copy everywhere; the original stays
        if isinstance(value, np.ndarray):
            value[...] = 0
        else:
            inner[key] = 0
    copied["bit_generator"] = "changed"
    assert repr(generator.state) == repr(state) != repr(copied)
    other = bits(0)
    other.state = _copied_state(state)  # a copy restores the generator exactly
    assert other.random_raw(4).tolist() == generator.random_raw(4).tolist()
