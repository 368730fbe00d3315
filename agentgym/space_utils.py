"""Gymnasium's space utilities for :class:`UnicodeText` and :class:`RGBImages`.

Gymnasium's vector envs and flatten helpers dispatch on the space type
(``functools.singledispatch``); a custom space works with them once it has handlers. This
module registers them, so ``AsyncVectorEnv`` at its default ``shared_memory=True``,
``gym.make_vec(..., vectorization_mode="async")`` and ``FlattenObservation`` run on every
agentgym id. ``import agentgym`` imports it, so the handlers exist as soon as the spaces
can be used (a package is imported before any of its modules).

Shared memory. Text and images vary in size and their bounds are large (a million
characters, sixteen 4096x4096 images), so a fixed buffer per env sized to the bounds would
be gigabytes. Each env instead gets a *slot*: a shared inline buffer (64 KiB for text,
1 MiB for images, or the bound if smaller) and, for a value that does not fit, a file in
a private directory on tmpfs (``/dev/shm`` where it exists). Nothing is cut: every value
comes back byte for byte. Text is stored as UTF-8 (lone surrogates kept), images as their
shapes followed by their raw bytes (the byte forms of :mod:`agentgym.spaces`).

``read_from_shared_memory`` returns a live view (:class:`SharedBatch`), like the numpy
views Gymnasium returns for Box spaces: indexing decodes the slot's current value.
Gymnasium deep-copies the observations before handing them out (``copy=True``, its
default), and a deep copy of the view is a plain tuple, the same type the vector env
returns with ``shared_memory=False``.

Flattening. Text flattens to a 1-D ``int32`` array of Unicode code points (a
``Sequence(Box(0, 0x10FFFF, (), int32), stack=True)`` point). Images stay whole: they are
already numeric arrays, and their sizes vary, so they cannot join one ``Box``;
``flatten_space(RGBImages)`` is the space itself. ``unflatten`` inverts both exactly.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import shutil
import sys
import tempfile
import weakref
from collections.abc import Callable, Iterator
from collections.abc import Sequence as AbcSequence
from multiprocessing.sharedctypes import SynchronizedArray
from types import ModuleType
from typing import Any

import numpy as np
from gymnasium.spaces import Box, Sequence, Space, Tuple
from gymnasium.spaces.utils import (
    flatdim,
    flatten,
    flatten_space,
    is_space_dtype_shape_equiv,
    unflatten,
)
from gymnasium.vector.utils import (
    batch_differing_spaces,
    create_shared_memory,
    read_from_shared_memory,
    write_to_shared_memory,
)

from agentgym.spaces import (
    RGBImages,
    UnicodeText,
    decode_images,
    decode_text,
    encode_images,
    encode_text,
)

__all__ = [
    "INLINE_IMAGE_BYTES",
    "INLINE_TEXT_BYTES",
    "SharedBatch",
    "SlotBuffer",
    "decode_images",
    "decode_text",
    "encode_images",
    "encode_text",
]

#: Inline bytes per env for a text observation; longer text spills to a tmpfs file.
INLINE_TEXT_BYTES = 64 * 1024
#: Inline bytes per env for an image tuple; larger tuples spill to a tmpfs file.
INLINE_IMAGE_BYTES = 1024 * 1024

_MAX_CODE_POINT = 0x10FFFF


# ---- shared slots -----------------------------------------------------------------------------


def _remove_dir(path: str, owner_pid: int) -> None:
    # A forked worker holds a copy of the buffer; only the process that made it cleans up.
    if os.getpid() == owner_pid:
        shutil.rmtree(path, ignore_errors=True)


def _spill_root() -> str | None:
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None


class SlotBuffer:
    """``n`` slots of variable-size bytes shared between processes.

    A value up to ``capacity`` bytes is written into a shared inline buffer; a larger one
    goes to ``<dir>/slot-<index>`` (written to a temporary name, then renamed, so a reader
    never sees half a file). The header holds each slot's length, negative when spilled.
    One writer per slot (the vector env's worker ``index``); the reader is the main process,
    which reads after the worker reported back.
    """

    def __init__(self, n: int, capacity: int, ctx: ModuleType) -> None:
        self.n = int(n)
        self.capacity = int(capacity)
        self.lengths: SynchronizedArray[Any] = ctx.Array("q", self.n)
        self.data: SynchronizedArray[Any] = ctx.Array("B", self.n * self.capacity)
        self.spill_dir = tempfile.mkdtemp(prefix="agentgym-vec-", dir=_spill_root())
        self._finalizer = weakref.finalize(self, _remove_dir, self.spill_dir, os.getpid())

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_finalizer", None)  # the worker's copy never removes the directory
        return state

    def _path(self, index: int) -> str:
        return os.path.join(self.spill_dir, f"slot-{index}")

    def write(self, index: int, payload: bytes) -> None:
        """Store ``payload`` as slot ``index``'s value."""
        if not 0 <= index < self.n:
            raise IndexError(f"slot index must be in [0, {self.n}), got {index}")
        size = len(payload)
        if size <= self.capacity:
            view = np.frombuffer(self.data.get_obj(), dtype=np.uint8)  # type: ignore[call-overload]
            start = index * self.capacity
            view[start : start + size] = np.frombuffer(payload, dtype=np.uint8)
            self.lengths[index] = size
            return
        tmp = self._path(index) + f".{os.getpid()}.tmp"
        with open(tmp, "wb") as fh:
            fh.write(payload)
        os.replace(tmp, self._path(index))
        self.lengths[index] = -size - 1

    def read(self, index: int) -> bytes:
        """Slot ``index``'s current value (a copy)."""
        if not 0 <= index < self.n:
            raise IndexError(f"slot index must be in [0, {self.n}), got {index}")
        size = int(self.lengths[index])
        if size >= 0:
            start = index * self.capacity
            return bytes(memoryview(self.data.get_obj()).cast("B")[start : start + size])
        with open(self._path(index), "rb") as fh:
            payload = fh.read()
        if len(payload) != -size - 1:
            raise RuntimeError(
                f"shared slot {index} should hold {-size - 1} bytes in {self._path(index)}, "
                f"found {len(payload)}: the file was changed by something other than its worker"
            )
        return payload


class SharedBatch(AbcSequence[Any]):
    """A live, read-only view of one sub-space's values across the vector env's slots.

    ``copy.deepcopy`` (what Gymnasium's vector envs apply before returning observations)
    gives a plain tuple of decoded values.
    """

    def __init__(self, buffer: SlotBuffer, decode: Callable[[bytes], Any], empty: Any) -> None:
        self._buffer = buffer
        self._decode = decode
        self._empty = empty  # the value of a slot no worker has written yet

    def __len__(self) -> int:
        return self._buffer.n

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        i = int(index)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(f"index {index} out of range for {len(self)} envs")
        data = self._buffer.read(i)
        return self._decode(data) if data else self._empty

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(len(self)))

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[Any, ...]:
        return tuple(self)

    def __copy__(self) -> tuple[Any, ...]:
        return tuple(self)

    def __repr__(self) -> str:
        return f"SharedBatch({tuple(self)!r})"


# ---- vector env handlers --------------------------------------------------------------------


@create_shared_memory.register(UnicodeText)
def _create_text_memory(space: UnicodeText, n: int = 1, ctx: ModuleType | None = None) -> Any:
    import multiprocessing

    capacity = min(4 * space.max_length, INLINE_TEXT_BYTES)
    return SlotBuffer(n, capacity, ctx or multiprocessing)


@create_shared_memory.register(RGBImages)
def _create_images_memory(space: RGBImages, n: int = 1, ctx: ModuleType | None = None) -> Any:
    import multiprocessing

    bound = (
        8 * (1 + 2 * space.max_images) + space.max_images * space.max_height * space.max_width * 3
    )
    return SlotBuffer(n, min(bound, INLINE_IMAGE_BYTES), ctx or multiprocessing)


@read_from_shared_memory.register(UnicodeText)
def _read_text_memory(space: UnicodeText, shared_memory: SlotBuffer, n: int = 1) -> SharedBatch:
    return SharedBatch(shared_memory, decode_text, "")


@read_from_shared_memory.register(RGBImages)
def _read_images_memory(space: RGBImages, shared_memory: SlotBuffer, n: int = 1) -> SharedBatch:
    return SharedBatch(shared_memory, decode_images, ())


@write_to_shared_memory.register(UnicodeText)
def _write_text_memory(
    space: UnicodeText, index: int, value: str, shared_memory: SlotBuffer
) -> None:
    shared_memory.write(index, encode_text(value))


@write_to_shared_memory.register(RGBImages)
def _write_images_memory(
    space: RGBImages, index: int, value: tuple[np.ndarray, ...], shared_memory: SlotBuffer
) -> None:
    shared_memory.write(index, encode_images(tuple(value)))


@batch_differing_spaces.register(UnicodeText)
@batch_differing_spaces.register(RGBImages)
def _batch_differing(spaces: Any) -> Tuple:  # type: ignore[misc]
    # Called on the first space of the list (singledispatch on a list's first element is
    # what Gymnasium does for its own spaces): a Tuple of the per-env spaces.
    return Tuple(tuple(spaces))


@is_space_dtype_shape_equiv.register(UnicodeText)
@is_space_dtype_shape_equiv.register(RGBImages)
def _same_space(space_1: Space[Any], space_2: Any) -> bool:
    return bool(space_1 == space_2)


# ---- flatten ------------------------------------------------------------------------------------


def _text_flat_space() -> Sequence:
    return Sequence(Box(0, _MAX_CODE_POINT, shape=(), dtype=np.int32), stack=True)


@flatten_space.register(UnicodeText)
def _flatten_space_text(space: UnicodeText) -> Sequence:
    return _text_flat_space()


@flatten_space.register(RGBImages)
def _flatten_space_images(space: RGBImages) -> RGBImages:
    return space


@flatten.register(UnicodeText)
def _flatten_text(space: UnicodeText, x: str) -> np.ndarray:  # type: ignore[misc]
    return np.fromiter((ord(c) for c in x), dtype=np.int32, count=len(x))


@flatten.register(RGBImages)
def _flatten_images(space: RGBImages, x: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:  # type: ignore[misc]
    return tuple(x)


@unflatten.register(UnicodeText)
def _unflatten_text(space: UnicodeText, x: Any) -> str:  # type: ignore[misc]
    return "".join(map(chr, np.asarray(x, dtype=np.int64).reshape(-1).tolist()))


@unflatten.register(RGBImages)
def _unflatten_images(space: RGBImages, x: Any) -> tuple[np.ndarray, ...]:  # type: ignore[misc]
    return tuple(np.asarray(img, dtype=np.uint8) for img in x)


@flatdim.register(UnicodeText)
@flatdim.register(RGBImages)
def _flatdim(space: Space[Any]) -> int:
    raise ValueError(
        f"{space} has no fixed flat size: its values vary in length, so it cannot become one "
        "numpy Box. flatten() still works: text -> int32 code points, images kept whole."
    )


# ---- Minari ------------------------------------------------------------------------------------
# Minari serialises a dataset's spaces with its own dispatchers; agentgym.integrations.minari
# registers the agentgym spaces with them. Importing Minari takes seconds, so that happens
# when ``minari.serialization`` is first imported (or now, if it already was), never by
# importing Minari from here: ``minari.load_dataset`` then rebuilds the spaces in any process
# that imported agentgym.

_MINARI_MODULE = "minari.serialization"


def register_minari(module: ModuleType) -> None:
    """Register the agentgym spaces with ``minari.serialization`` (``module``)."""
    from agentgym.integrations.minari import register_serializers

    register_serializers(module)


class _RunAfterExec(importlib.abc.Loader):
    def __init__(self, loader: Any, callback: Callable[[ModuleType], None]) -> None:
        self._loader = loader
        self._callback = callback

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        self._callback(module)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs ``callback(module)`` right after ``name`` is first imported."""

    def __init__(self, name: str, callback: Callable[[ModuleType], None]) -> None:
        self.name = name
        self.callback = callback

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)  # one shot; lets the real finders answer
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None:
            spec.loader = _RunAfterExec(spec.loader, self.callback)
        return spec


if _MINARI_MODULE in sys.modules:
    register_minari(sys.modules[_MINARI_MODULE])
else:
    sys.meta_path.insert(0, _AfterImport(_MINARI_MODULE, register_minari))
