"""OCR through Debian's ``tesseract-ocr`` binary, via ``pytesseract``.

Real OCR, not a lookup of the scene graph: the tool reads pixels. Tesseract runs with
``OMP_THREAD_LIMIT=1`` unless the variable is already set (small crops OCR faster on one
thread, and pooled envs do not oversubscribe the cores). A timeout becomes an
:class:`OcrError` that the tool reports to the agent (a smaller region helps). A missing
tesseract is the host's fault, not the agent's: it is an :class:`OcrUnavailableError`, warned
about once per process, which the visual envs report in ``info["system_error"]`` without a
format penalty (``agentgym doctor`` checks for it too).
"""

from __future__ import annotations

import logging
import os
import warnings
from functools import lru_cache

from PIL import Image

logger = logging.getLogger(__name__)

#: Page segmentation "a single uniform block of text" suits lines, cells and labels.
TESSERACT_CONFIG = "--psm 6"
TIMEOUT_S = 10.0
#: Tesseract reads best around 20-40 px text; crops are upscaled to at least this height.
MIN_HEIGHT = 48
#: Crops are shrunk to at most this many pixels before OCR (bounds time and memory).
MAX_PIXELS = 4_000_000


class OcrError(RuntimeError):
    """OCR could not run; the message says why and how to fix it."""


class OcrUnavailableError(OcrError):
    """tesseract (or pytesseract) is not installed on this host: a setup problem to fix."""


_warned = False


def _unavailable(message: str) -> OcrUnavailableError:
    """The error for a missing OCR engine, warned about once per process."""
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(
            f"agentgym visual envs: OCR is unavailable on this host ({message}). The ocr tool "
            "reports this in info['system_error'] instead of reading text, so the oracle and "
            "agents cannot read printed values. Run `agentgym doctor`.",
            RuntimeWarning,
            stacklevel=3,
        )
        logger.error("OCR is unavailable: %s", message)
    return OcrUnavailableError(message)


@lru_cache(maxsize=1)
def tesseract_version() -> str:
    """The installed tesseract version, or raise :class:`OcrError` when it is missing."""
    try:
        import pytesseract
    except ImportError as exc:
        raise _unavailable(
            "pytesseract is not installed: pip install 'agentgym-suite[visual]'"
        ) from exc
    try:
        return str(pytesseract.get_tesseract_version())
    except Exception as exc:
        raise _unavailable(
            "the tesseract binary was not found: apt-get install tesseract-ocr "
            f"tesseract-ocr-eng (or set pytesseract.pytesseract.tesseract_cmd). ({exc})"
        ) from exc


#: White border (px) put around every image given to tesseract.
MARGIN = 10


def _grown(width: int, height: int) -> tuple[int, int]:
    """The size after the upscale to :data:`MIN_HEIGHT` (unchanged when tall enough)."""
    if height >= MIN_HEIGHT:
        return width, height
    factor = MIN_HEIGHT / max(1, height)
    return max(1, round(width * factor)), MIN_HEIGHT


def _shrunk(width: int, height: int) -> tuple[int, int]:
    """The size after the shrink to :data:`MAX_PIXELS` (unchanged when small enough)."""
    if width * height <= MAX_PIXELS:
        return width, height
    factor = (MAX_PIXELS / (width * height)) ** 0.5
    return max(1, int(width * factor)), max(1, int(height * factor))


def fitted_size(width: int, height: int) -> tuple[int, int]:
    """The size :func:`fit_for_tesseract` gives a ``width`` x ``height`` image, computed
    without touching pixels (so a caller can price an OCR call before preparing it)."""
    width, height = _shrunk(*_grown(width, height))
    return width + 2 * MARGIN, height + 2 * MARGIN


def fit_for_tesseract(image: Image.Image) -> Image.Image:
    """What tesseract is given for ``image``: grey, scaled into range, with a white margin.

    Its pixel count is what one OCR call costs (tesseract's time grows with it), which is how
    the visual envs meter OCR (:func:`ocr_cost`) without timing anything; its size is
    :func:`fitted_size` of the image's.
    """
    img = image.convert("L")
    size = _grown(*img.size)
    if size != img.size:
        img = img.resize(size, Image.Resampling.LANCZOS)
    size = _shrunk(*img.size)
    if size != img.size:
        img = img.resize(size)
    # a white margin helps tesseract find text that touches the crop's edge
    framed = Image.new("L", (img.width + 2 * MARGIN, img.height + 2 * MARGIN), 255)
    framed.paste(img, (MARGIN, MARGIN))
    return framed


def ocr_cost(fitted: Image.Image) -> int:
    """The cost of OCR on an image from :func:`fit_for_tesseract`: its number of pixels."""
    return fitted.width * fitted.height


def read_text(image: Image.Image, *, fitted: bool = False) -> str:
    """The text tesseract reads in ``image``, whitespace-normalised per line.

    ``fitted=True`` says ``image`` already came from :func:`fit_for_tesseract`.
    """
    import pytesseract

    tesseract_version()
    # crops are small: one OpenMP thread is faster than several fighting over the cores
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")
    framed = image if fitted else fit_for_tesseract(image)
    try:
        raw = pytesseract.image_to_string(framed, config=TESSERACT_CONFIG, timeout=TIMEOUT_S)
    except RuntimeError as exc:  # pytesseract raises RuntimeError on timeout
        raise OcrError(f"OCR timed out after {TIMEOUT_S:.0f} s; try a smaller region.") from exc
    lines = [" ".join(line.split()) for line in raw.splitlines()]
    return "\n".join(line for line in lines if line)
