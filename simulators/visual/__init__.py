"""The worlds behind the visual family, usable without Gymnasium.

* :mod:`.tasks` — seeded generators that render a high-resolution image and its exact ground
  truth (a :class:`~.scene.Scene`: question, answer, the box of the detail, a scene graph);
* :mod:`.tools` — the tools an agent calls on a scene (zoom, OCR, grounding, measuring,
  colour statistics, rotate, enhance, draw, calculator), each returning text and an optional
  image, and an error message instead of an exception on bad arguments;
* :mod:`.text` — fast, deterministic text drawing from a glyph atlas of Pillow's bundled font;
* :mod:`.ocr` — tesseract through pytesseract; :mod:`.calc` — the safe calculator.

Examples:
    >>> from agentgym.simulators.visual.tasks import generate
    >>> from agentgym.simulators.visual.tools import run_tool
    >>> scene = generate("table", seed=7)
    >>> scene.view.shape
    (480, 640, 3)
    >>> run_tool(scene, "zoom", {"box": [0, 0, 50, 40]}).image.shape
    (205, 256, 3)
"""
