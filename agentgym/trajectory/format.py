"""The ``.agtr`` byte layout: file preamble, frames, and the msgpack codec.

A file is an 12-byte preamble followed by frames::

    preamble  = MAGIC (8 bytes) + schema major (u16 LE) + schema minor (u16 LE)
    frame     = FRAME_MARK (4) + length (u32 LE) + crc32(payload) (u32 LE)
                + crc32(the 12 bytes before it) (u32 LE) + payload (``length`` bytes)
    payload   = one msgpack map with a ``"type"`` key

The first frame is the ``header`` (versions, env id, created_at); then ``episode_start``,
``step`` and ``episode_end`` frames follow in the order they happened. Frames are
self-delimiting and self-checking: the head CRC tells a reader whether the length can be
trusted *before* it reads the payload (so a flipped bit cannot make it allocate 4 GB), the
payload CRC catches damage inside the payload, and the 4-byte mark lets a reader find the
next frame after damage (resynchronisation). Why plain msgpack is not enough: see
docs/trajectory.md.

numpy arrays travel as msgpack ext type :data:`EXT_NDARRAY` (dtype string, shape, raw
C-order bytes). Observation images are stored as lossless PNG (see :mod:`.images`).

Text with lone surrogates (a model's half emoji, ``"\\ud83d"``) has no UTF-8 form, so it
cannot be a msgpack ``str``. Such a string travels as ext type :data:`EXT_TEXT` holding its
UTF-8 bytes with the surrogates kept (Python's ``surrogatepass``), and reads back as the
identical ``str``: a recorded action is replayed exactly as the model wrote it. Every msgpack
``str`` in a file is therefore valid UTF-8.
"""

from __future__ import annotations

import math
import re
import struct
import threading
from collections.abc import Mapping
from typing import Any

import msgpack
import numpy as np

from agentgym.error import AgentGymError

try:  # the same CRC-32 as zlib's (same values, same files), 4-7x faster with SIMD
    from isal.isal_zlib import crc32
except ImportError:  # pragma: no cover - isal is optional
    from zlib import crc32

MAGIC = b"\x89AGTR\r\n\x1a"
"""8 bytes. The high byte and the CR/LF/^Z catch text-mode transfers, as in PNG."""
SCHEMA_MAJOR = 1
"""Bumped on changes old readers cannot read; readers refuse a newer major."""
SCHEMA_MINOR = 1
"""Bumped on additions; readers ignore fields they do not know. 1.1 added :data:`EXT_TEXT`."""
PREAMBLE = struct.Struct("<8sHH")
FRAME_MARK = b"\xa7AGF"
FRAME_HEAD = struct.Struct("<4sIII")
"""mark, payload length, payload crc32, head crc32 (over mark + length + payload crc)."""
_HEAD3 = struct.Struct("<4sII")
_U32 = struct.Struct("<I")
MAX_FRAME_BYTES = 512 * 1024 * 1024
"""A frame claiming more than this is treated as damage, never allocated."""
EXT_NDARRAY = 1
EXT_TEXT = 2
"""A ``str`` with lone surrogates: its UTF-8 bytes, surrogates encoded as by ``surrogatepass``."""
_ALLOWED_KINDS = frozenset("biufcSUV?")  # never object arrays ("O")


class TrajectoryFormatError(AgentGymError, ValueError):
    """The file is not a readable ``.agtr`` file (wrong magic, empty, newer major version)."""


class TrajectoryNotFoundError(AgentGymError, FileNotFoundError):
    """No file at the given path."""


def preamble_bytes() -> bytes:
    """The 12 bytes every ``.agtr`` file starts with."""
    return PREAMBLE.pack(MAGIC, SCHEMA_MAJOR, SCHEMA_MINOR)


def check_preamble(data: bytes, path: str = "<file>") -> tuple[int, int]:
    """Validate the first 12 bytes; return (major, minor) or raise a clear error."""
    if len(data) == 0:
        raise TrajectoryFormatError(
            f"{path} is empty: expected an .agtr trajectory (it starts with {MAGIC!r}). "
            "A recording that crashed before its first write leaves an empty file; "
            "record again."
        )
    if len(data) < PREAMBLE.size or not data.startswith(MAGIC):
        head = data[:8]
        raise TrajectoryFormatError(
            f"{path} is not an .agtr trajectory: expected the magic bytes {MAGIC!r}, "
            f"got {head!r}. Pass a file written by agentgym.trajectory.Recorder or Record."
        )
    _, major, minor = PREAMBLE.unpack(data[: PREAMBLE.size])
    if major > SCHEMA_MAJOR:
        raise TrajectoryFormatError(
            f"{path} uses trajectory schema {major}.{minor}, but this agentgym reads major "
            f"version {SCHEMA_MAJOR} only. Upgrade agentgym (pip install -U agentgym-suite) to read it."
        )
    if major < 1:
        raise TrajectoryFormatError(f"{path} has an invalid schema version {major}.{minor}.")
    return major, minor


def frame_bytes(payload: bytes) -> bytes:
    """One complete frame (head + payload) for ``payload``."""
    if len(payload) > MAX_FRAME_BYTES:
        raise TrajectoryFormatError(
            f"a frame of {len(payload)} bytes exceeds the limit of {MAX_FRAME_BYTES} bytes; "
            "record smaller observations (e.g. downscale screenshots)."
        )
    partial = _HEAD3.pack(FRAME_MARK, len(payload), crc32(payload))
    return b"".join((partial, _U32.pack(crc32(partial)), payload))


def parse_frame_head(head: bytes) -> tuple[int, int] | None:
    """(length, payload crc) if ``head`` is a valid frame head, else None."""
    if len(head) != FRAME_HEAD.size:
        return None
    mark, length, crc, head_crc = FRAME_HEAD.unpack(head)
    if mark != FRAME_MARK or crc32(head[:12]) != head_crc or length > MAX_FRAME_BYTES:
        return None
    return length, crc


# ---- msgpack codec -----------------------------------------------------------------------


def _default(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind not in _ALLOWED_KINDS:
            return obj.tolist()
        arr = np.ascontiguousarray(obj)
        body = msgpack.packb([arr.dtype.str, list(arr.shape), arr.tobytes()], use_bin_type=True)
        return msgpack.ExtType(EXT_NDARRAY, body)
    return _default_scalar(obj)


def _default_scalar(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, set | frozenset):
        return sorted(obj, key=repr)
    return _lossless_text(repr(obj))


_SURROGATE = re.compile("[\ud800-\udfff]")
_MAX_NESTING = 512
"""msgpack's own nesting limit; deeper values fail to pack either way."""


def _lossless_text(text: str) -> Any:
    """``text`` itself, or an :data:`EXT_TEXT` value when it holds lone surrogates."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return msgpack.ExtType(EXT_TEXT, text.encode("utf-8", "surrogatepass"))


def _wrap_surrogate_text(obj: Any, depth: int = 0) -> Any:
    """``obj`` with every string (map keys too) that holds lone surrogates made EXT_TEXT.

    Runs only after a pack failed on such a string, so the common path costs nothing.
    """
    if isinstance(obj, str):
        return _lossless_text(obj)
    if depth > _MAX_NESTING:
        return obj
    if isinstance(obj, Mapping):
        return {
            _wrap_surrogate_text(k, depth + 1): _wrap_surrogate_text(v, depth + 1)
            for k, v in obj.items()
        }
    if isinstance(obj, list | tuple):
        return [_wrap_surrogate_text(v, depth + 1) for v in obj]
    return obj


_DTYPES: dict[str, np.dtype] = {}
"""dtype strings seen so far -> checked dtype (building a dtype from its string is slow)."""


def _dtype(dtype_str: str) -> np.dtype:
    dtype = _DTYPES.get(dtype_str)
    if dtype is None:
        dtype = np.dtype(dtype_str)
        if dtype.kind not in _ALLOWED_KINDS:
            raise ValueError(f"refusing ndarray of dtype {dtype_str!r}")
        if len(_DTYPES) < 256:  # bounded: a hostile file cannot grow it without limit
            _DTYPES[dtype_str] = dtype
    return dtype


def _ext_hook(code: int, data: bytes) -> Any:
    if code == EXT_TEXT:
        return data.decode("utf-8", "surrogatepass")
    if code != EXT_NDARRAY:
        return msgpack.ExtType(code, data)  # a newer writer's type: pass it through
    dtype_str, shape, raw = msgpack.unpackb(data, raw=False)
    dtype = _dtype(dtype_str)
    count = math.prod(shape)  # plain ints: exact, no overflow
    if count * dtype.itemsize != len(raw):
        raise ValueError("ndarray ext: shape and byte count disagree")
    arr = np.frombuffer(raw, dtype=dtype)
    if len(shape) != 1:
        arr = arr.reshape(shape)
    return arr.copy()  # writable and independent of the frame's bytes


_local = threading.local()


def pack(obj: Any) -> bytes:
    """Encode one frame payload (a dict) as msgpack; numpy arrays become ext type 1.

    Strings with lone surrogates become ext type 2 (see the module docstring), so no string
    a model can emit makes this raise.
    """
    packer = getattr(_local, "packer", None)
    if packer is None:  # one Packer per thread: Packer objects are not thread-safe
        packer = _local.packer = msgpack.Packer(default=_default, use_bin_type=True)
    try:
        return packer.pack(obj)
    except UnicodeEncodeError:  # a lone surrogate somewhere: the rare, slower path
        packer.reset()
    except BaseException:
        packer.reset()
        raise
    try:
        return packer.pack(_wrap_surrogate_text(obj))
    except BaseException:
        packer.reset()
        raise


def unpack(data: bytes) -> Any:
    """Decode one frame payload. Bounded by ``len(data)``; raises ValueError on garbage."""
    return msgpack.unpackb(
        data,
        raw=False,
        ext_hook=_ext_hook,
        strict_map_key=False,
        use_list=True,
    )
