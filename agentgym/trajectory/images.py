"""Observation images on disk: lossless PNG bytes plus the sha256 of the pixels.

The hash is taken over the raw pixel buffer (``H x W x C`` uint8, C order), not over the PNG,
so replay can compare a live image to a recorded one without re-encoding, and a different
PNG encoder version never shows up as a divergence. Images are never stored lossy.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from typing import Any

import numpy as np

PNG_COMPRESS_LEVEL = 1
"""zlib level for PNG: 1 is several times faster than the default 6 at a modest size cost."""


def pixel_sha256(image: np.ndarray) -> str:
    """The hex sha256 of an image's pixels (C-order bytes)."""
    return hashlib.sha256(np.ascontiguousarray(image).tobytes()).hexdigest()


def encode_image(image: np.ndarray, compress_level: int = PNG_COMPRESS_LEVEL) -> dict[str, Any]:
    """``{"png": bytes, "sha256": str, "shape": [h, w, c]}`` for one HxWx3 (or HxW) uint8 image."""
    from PIL import Image

    arr = np.ascontiguousarray(np.asarray(image))
    if arr.dtype != np.uint8:
        arr = np.clip(arr, 0, 255).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="PNG", compress_level=compress_level)
    return {"png": buf.getvalue(), "sha256": pixel_sha256(arr), "shape": list(arr.shape)}


@dataclass(frozen=True)
class StoredImage:
    """An image as read back: PNG bytes, decoded only when asked (:meth:`to_array`)."""

    png: bytes
    sha256: str
    shape: tuple[int, ...]

    @classmethod
    def from_record(cls, rec: Any) -> StoredImage | Any:
        """Build from a stored dict; anything else (a newer format) is returned unchanged."""
        if isinstance(rec, dict) and isinstance(rec.get("png"), bytes):
            return cls(rec["png"], str(rec.get("sha256", "")), tuple(rec.get("shape", ())))
        return rec

    def to_array(self) -> np.ndarray:
        """Decode the PNG to a uint8 array."""
        from PIL import Image

        with Image.open(io.BytesIO(self.png)) as im:
            return np.asarray(im.convert("RGB") if im.mode not in ("RGB", "L") else im).copy()

    def verify(self) -> bool:
        """True when the decoded pixels hash to the stored sha256."""
        return pixel_sha256(self.to_array()) == self.sha256
