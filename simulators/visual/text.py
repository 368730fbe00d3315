"""Fast, deterministic text drawing from a glyph atlas.

Pillow's ``ImageDraw.text`` costs about half a millisecond per string, which is most of a
render budget of 20 ms for a page of a hundred lines. Every glyph of a font size is rasterised
once into a cached atlas; a string is then laid out with the glyph advances (no kerning, so
the layout is identical whichever FreeType/Raqm build is installed) and pasted with one mask.

The font is the one Pillow ships (``ImageFont.load_default(size)``), so renders need no
system fonts and are identical wherever the same Pillow version runs.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from PIL import Image, ImageFont

#: Characters pre-rasterised in every atlas; others are rasterised on first use.
_CHARSET = string.ascii_letters + string.digits + string.punctuation + " "

Color = tuple[int, int, int]


@dataclass
class _Glyph:
    mask: np.ndarray  # uint8 alpha, rows = atlas line height
    advance: int
    offset: int  # x offset of the mask relative to the pen position


class GlyphFont:
    """One font size: a glyph atlas plus layout and drawing of strings.

    Examples:
        >>> font = GlyphFont.get(20)
        >>> w, h = font.size_of("Order 42")
        >>> w > 0 and h == font.line_height
        True
    """

    def __init__(self, size: int):
        self.size = int(size)
        font = ImageFont.load_default(self.size)
        if not isinstance(font, ImageFont.FreeTypeFont):  # Pillow built without FreeType
            raise RuntimeError("agentgym's visual tasks need Pillow with FreeType support.")
        self._font = font
        ascent, descent = self._font.getmetrics()
        self.ascent = ascent
        self.line_height = ascent + descent
        self._glyphs: dict[str, _Glyph] = {}
        self._words: dict[str, _Glyph] = {}
        for ch in _CHARSET:
            self._glyph(ch)

    @staticmethod
    @lru_cache(maxsize=64)
    def get(size: int) -> GlyphFont:
        """The shared atlas for ``size`` pixels (built once per process)."""
        return GlyphFont(max(4, min(int(size), 400)))

    def _glyph(self, ch: str) -> _Glyph:
        glyph = self._glyphs.get(ch)
        if glyph is None:
            advance = round(self._font.getlength(ch))
            left, _, right, _ = self._font.getbbox(ch, anchor="ls")
            left = min(0, int(left))
            width = max(1, int(right) - left)
            canvas = Image.new("L", (width, self.line_height), 0)
            from PIL import ImageDraw

            ImageDraw.Draw(canvas).text(
                (-left, self.ascent), ch, fill=255, font=self._font, anchor="ls"
            )
            glyph = _Glyph(np.asarray(canvas, dtype=np.uint8), advance, left)
            self._glyphs[ch] = glyph
        return glyph

    def _word(self, word: str) -> _Glyph:
        """A space-free run of glyphs composed once and cached (words repeat on a page)."""
        cached = self._words.get(word)
        if cached is not None:
            return cached
        glyphs = [self._glyph(ch) for ch in word]
        starts, pen = [], 0
        for g in glyphs:
            starts.append(pen + g.offset)
            pen += g.advance
        left = min(0, *starts)
        right = max(st + g.mask.shape[1] for st, g in zip(starts, glyphs))
        mask = np.zeros((self.line_height, max(1, right - left)), dtype=np.uint8)
        for st, g in zip(starts, glyphs):
            region = mask[:, st - left : st - left + g.mask.shape[1]]
            np.maximum(region, g.mask, out=region)
        word_glyph = _Glyph(mask, pen, left)
        if len(self._words) >= 4096:
            self._words.clear()
        self._words[word] = word_glyph
        return word_glyph

    def size_of(self, text: str) -> tuple[int, int]:
        """Width and height in pixels of ``text`` on one line."""
        glyph = self._glyph
        return max(1, sum(glyph(ch).advance for ch in text)), self.line_height

    def blit(
        self, target: np.ndarray, xy: tuple[float, float], text: str
    ) -> tuple[int, int, int, int]:
        """Max-composite the glyphs of ``text`` into the alpha array ``target`` at ``xy``.

        Returns the ink box (x0, y0, x1, y1), clipped to ``target``: the tight box of the
        pixels actually drawn, so it is exact ground truth for "where is this text".
        """
        x, y = round(xy[0]), round(xy[1])
        height, width = target.shape
        h = self.line_height
        if y >= height or y + h <= 0:
            return (x, y, x + 1, y + 1)
        top, skip = max(0, y), max(0, -y)
        rows = slice(top, min(height, y + h))
        g_rows = slice(skip, skip + (rows.stop - rows.start))
        ink = [width, height, -1, -1]
        space = self._glyph(" ").advance
        pieces: list[_Glyph | None] = []
        for i, word in enumerate(text.split(" ")):
            if i:
                pieces.append(None)
            if word in self._words or (len(word) > 1 and word.isalpha()):
                pieces.append(self._word(word))  # repeated words: one blit
            else:
                pieces.extend(self._glyph(ch) for ch in word)
        for g in pieces:
            if g is None:
                x += space
                continue
            x0 = x + g.offset
            if x0 < width and x0 + g.mask.shape[1] > 0:
                a, b = max(0, x0), min(width, x0 + g.mask.shape[1])
                src = g.mask[g_rows, a - x0 : b - x0]
                region = target[rows, a:b]
                np.maximum(region, src, out=region)
                ink[0] = min(ink[0], a)
                ink[2] = max(ink[2], b)
            x += g.advance
        if ink[2] < 0:
            return (x, y, x + 1, y + 1)
        band = target[rows, ink[0] : ink[2]]
        filled = np.flatnonzero(band.max(axis=1))
        cols = np.flatnonzero(band.max(axis=0))
        if filled.size == 0:
            return (ink[0], top, ink[2], top + 1)
        return (
            ink[0] + int(cols[0]),
            top + int(filled[0]),
            ink[0] + int(cols[-1]) + 1,
            top + int(filled[-1]) + 1,
        )

    def mask(self, text: str) -> np.ndarray:
        """The alpha mask of ``text`` (line height x width, uint8)."""
        width, height = self.size_of(text)
        out = np.zeros((height, width), dtype=np.uint8)
        self.blit(out, (0, 0), text)
        return out

    def draw(
        self, image: Image.Image, xy: tuple[float, float], text: str, fill: Color
    ) -> tuple[int, int, int, int]:
        """Draw ``text`` with its top-left corner at ``xy``; returns the ink box."""
        layer = TextLayer(image.size)
        box = layer.add(xy, text, self.size)
        layer.paste_onto(image, fill)
        return box


class TextLayer:
    """An alpha layer many strings are drawn into, then pasted onto an image.

    Only the ink boxes of the strings are pasted (a full-page masked paste costs tens of
    milliseconds at source resolution; the boxes of a page of text are a fraction of it).

    Examples:
        >>> from PIL import Image
        >>> img = Image.new("RGB", (200, 50), "white")
        >>> layer = TextLayer(img.size)
        >>> box = layer.add((5, 5), "Order 42", 20)
        >>> layer.paste_onto(img, (0, 0, 0))
        >>> box[0] >= 5 and box[2] > box[0]
        True
    """

    def __init__(self, size: tuple[int, int]):
        self.width, self.height = size
        self._alpha: np.ndarray | None = None
        self._boxes: list[tuple[int, int, int, int]] = []

    def add(self, xy: tuple[float, float], text: str, size: int) -> tuple[int, int, int, int]:
        """Draw ``text`` at ``xy`` (top-left) in the bundled font; returns its ink box."""
        if self._alpha is None:
            self._alpha = np.zeros((self.height, self.width), dtype=np.uint8)
        box = GlyphFont.get(size).blit(self._alpha, xy, text)
        x0, y0 = max(0, box[0]), max(0, box[1])
        x1, y1 = min(self.width, box[2]), min(self.height, box[3])
        if x1 > x0 and y1 > y0:
            self._boxes.append((x0, y0, x1, y1))
        return box

    def ink_within(self, box: tuple[float, float, float, float]) -> tuple[int, int, int, int]:
        """The tight box of the ink drawn so far inside ``box`` (e.g. one word of a line)."""
        if self._alpha is None:
            raise ValueError("nothing has been drawn on this layer yet")
        x0, y0 = max(0, int(box[0])), max(0, int(box[1]))
        x1, y1 = min(self.width, int(np.ceil(box[2]))), min(self.height, int(np.ceil(box[3])))
        band = self._alpha[y0:y1, x0:x1]
        rows = np.flatnonzero(band.max(axis=1)) if band.size else np.array([], dtype=int)
        cols = np.flatnonzero(band.max(axis=0)) if band.size else np.array([], dtype=int)
        if rows.size == 0:
            raise ValueError(f"no ink inside {box}")
        return (
            x0 + int(cols[0]),
            y0 + int(rows[0]),
            x0 + int(cols[-1]) + 1,
            y0 + int(rows[-1]) + 1,
        )

    def paste_onto(self, image: Image.Image, fill: Color) -> None:
        """Paste everything drawn so far onto ``image`` in colour ``fill``."""
        if self._alpha is None:
            return
        for x0, y0, x1, y1 in self._boxes:
            mask = Image.fromarray(self._alpha[y0:y1, x0:x1], "L")
            image.paste(fill, (x0, y0, x1, y1), mask)
        self._boxes = []
        self._alpha = None


def draw_text(
    image: Image.Image, xy: tuple[float, float], text: str, size: int, fill: Color = (0, 0, 0)
) -> tuple[int, int, int, int]:
    """Draw ``text`` at ``xy`` (top-left) in the bundled font of ``size`` px; returns its ink box."""
    return GlyphFont.get(size).draw(image, xy, text, fill)


def text_size(text: str, size: int) -> tuple[int, int]:
    """Width and height of ``text`` at ``size`` px."""
    return GlyphFont.get(size).size_of(text)
