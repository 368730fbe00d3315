"""Gymnasium spaces for LLM environments: unicode text and variable-size RGB images.

gymnasium's own ``spaces.Text`` draws from an alphanumeric charset, so it rejects ordinary
model output (spaces, punctuation, ``<tool_call>``, any non-ASCII letter). ``UnicodeText``
accepts any ``str`` up to a length bound and samples strings that look like model output,
which is what conformance fuzzing needs. ``RGBImages`` holds a tuple of HxWx3 uint8 arrays
of any size within bounds. :func:`encode_text` / :func:`encode_images` (and their inverses)
are the lossless byte form of their values.

Gymnasium's vector-env and flatten handlers for these spaces live in
:mod:`agentgym.space_utils`, which ``import agentgym`` loads (a package is always imported
before its modules, so the handlers exist whenever these spaces can be used).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.spaces import Space

#: Characters ``UnicodeText.sample`` draws from: printable ASCII, whitespace, markup used by
#: the tool-call format, a few non-Latin letters and an emoji.
_SAMPLE_ALPHABET = (
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    " \n\t.,;:!?'\"(){}[]<>/\\-_=+*&^%$#@~`|"
    "éßøжλ中文字😀"
)


class UnicodeText(Space[str]):
    """Any Python ``str`` of at most ``max_length`` characters.

    Examples:
        >>> space = UnicodeText(max_length=16)
        >>> "héllo <b>" in space, "x" * 17 in space, b"bytes" in space
        (True, False, False)
        >>> _ = space.seed(0)
        >>> len(space.sample()) <= 16
        True
    """

    def __init__(self, max_length: int = 1 << 20, *, seed: int | np.random.Generator | None = None):
        if max_length < 1:
            raise ValueError(f"max_length must be >= 1, got {max_length}")
        self.max_length = int(max_length)
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """A random string of length 0..min(max_length, 64) over a mixed alphabet."""
        n = int(self.np_random.integers(0, min(self.max_length, 64) + 1))
        idx = self.np_random.integers(0, len(_SAMPLE_ALPHABET), size=n)
        return "".join(_SAMPLE_ALPHABET[i] for i in idx)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"UnicodeText(max_length={self.max_length})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UnicodeText) and other.max_length == self.max_length

    def to_jsonable(self, sample_n: Iterable[str]) -> list[str]:  # type: ignore[override]
        return list(sample_n)

    def from_jsonable(self, sample_n: Iterable[str]) -> list[str]:  # type: ignore[override]
        return list(sample_n)


class RGBImages(Space[tuple]):
    """A tuple of 0..``max_images`` RGB images, each an HxWx3 ``uint8`` array.

    Sizes vary per image, bounded by ``max_height`` x ``max_width``.

    Examples:
        >>> space = RGBImages(max_images=2, max_height=64, max_width=64)
        >>> img = np.zeros((10, 20, 3), dtype=np.uint8)
        >>> (img,) in space, (img, img, img) in space, () in space
        (True, False, True)
    """

    def __init__(
        self,
        max_images: int = 16,
        max_height: int = 4096,
        max_width: int = 4096,
        *,
        seed: int | np.random.Generator | None = None,
    ):
        self.max_images = int(max_images)
        self.max_height = int(max_height)
        self.max_width = int(max_width)
        super().__init__(shape=None, dtype=np.uint8, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> tuple[np.ndarray, ...]:
        n = int(self.np_random.integers(0, min(self.max_images, 2) + 1))
        out = []
        for _ in range(n):
            h = int(self.np_random.integers(1, min(self.max_height, 32) + 1))
            w = int(self.np_random.integers(1, min(self.max_width, 32) + 1))
            out.append(self.np_random.integers(0, 256, size=(h, w, 3), dtype=np.uint8))
        return tuple(out)

    def contains(self, x: Any) -> bool:
        if not isinstance(x, tuple) or len(x) > self.max_images:
            return False
        for img in x:
            if not (
                isinstance(img, np.ndarray)
                and img.dtype == np.uint8
                and img.ndim == 3
                and img.shape[2] == 3
                and 0 < img.shape[0] <= self.max_height
                and 0 < img.shape[1] <= self.max_width
            ):
                return False
        return True

    def __repr__(self) -> str:
        return (
            f"RGBImages(max_images={self.max_images}, max_size={self.max_height}x{self.max_width})"
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RGBImages) and (
            other.max_images,
            other.max_height,
            other.max_width,
        ) == (self.max_images, self.max_height, self.max_width)


def observation_space(
    max_text_length: int = 1 << 20,
    max_images: int = 16,
    max_image_size: tuple[int, int] = (4096, 4096),
) -> spaces.Dict:
    """The observation space every AgentEnv uses: ``{"text": str, "images": tuple}``."""
    return spaces.Dict(
        {
            "text": UnicodeText(max_text_length),
            "images": RGBImages(max_images, *max_image_size),
        }
    )


def action_space(max_length: int = 1 << 20) -> UnicodeText:
    """The action space every AgentEnv uses: one model turn as a string."""
    return UnicodeText(max_length)


# ---- values as bytes --------------------------------------------------------------------------
# The lossless byte form of each space's values: used by the shared-memory slots of the vector
# envs (agentgym.space_utils) and by Minari's packed images (agentgym.integrations.minari).


def encode_text(text: str) -> bytes:
    """UTF-8 bytes of ``text``; lone surrogates are kept (``surrogatepass``)."""
    return text.encode("utf-8", "surrogatepass")


def decode_text(data: bytes) -> str:
    """The inverse of :func:`encode_text`."""
    return data.decode("utf-8", "surrogatepass")


def encode_images(images: tuple[np.ndarray, ...]) -> bytes:
    """``[count, h1, w1, h2, w2, ...]`` as int64, then each image's raw uint8 bytes."""
    header = [len(images)]
    for img in images:
        header += [int(img.shape[0]), int(img.shape[1])]
    parts = [np.asarray(header, dtype="<i8").tobytes()]
    parts += [np.ascontiguousarray(img, dtype=np.uint8).tobytes() for img in images]
    return b"".join(parts)


def decode_images(data: bytes) -> tuple[np.ndarray, ...]:
    """The inverse of :func:`encode_images`; each image is a fresh, writable array."""
    count = int(np.frombuffer(data, dtype="<i8", count=1)[0])
    shapes = np.frombuffer(data, dtype="<i8", count=2 * count, offset=8).reshape(count, 2)
    offset = 8 * (1 + 2 * count)
    out = []
    for h, w in shapes:
        size = int(h) * int(w) * 3
        flat = np.frombuffer(data, dtype=np.uint8, count=size, offset=offset)
        out.append(flat.reshape(int(h), int(w), 3).copy())
        offset += size
    return tuple(out)
