"""Hand the heap memory a training iteration freed back to the operating system.

A training iteration allocates and frees many tensors of varying sizes (batches of
different lengths, activations, optimizer state). glibc keeps what was freed in its
arenas for reuse, and once a large block has been freed it also raises its threshold for
serving big blocks from the heap instead of their own mappings, so freed memory ends up
in fragmented heaps it never returns. A word-policy GiGPO run on Household (16 envs, 2
tasks x 8 per iteration) grew by about 170 MB of resident memory per iteration that way
(2.1 GB after 7 iterations) while the Python objects and tensors alive stayed the same;
with :func:`release_freed_memory` after each iteration it stayed at 0.38-0.46 GB. Nothing
else changes: the memory is free either way, and the next iteration allocates it again.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from typing import Any


@functools.cache
def _malloc_trim() -> Any:
    """glibc's ``malloc_trim``, or None where the C library has none (musl, macOS, Windows)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        return ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None


def release_freed_memory() -> bool:
    """Return the free pages of every malloc arena to the OS (``malloc_trim(0)``).

    True when the C library could do it (it may have found nothing to return), False
    where it has no ``malloc_trim``. Costs a walk over the heap: milliseconds, once per
    training iteration."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
