"""The system parts each env family needs, probed for real, each with the fix when missing.

``agentgym doctor`` prints these after the sandbox layers. A check never raises: whatever
goes wrong becomes a missing part with its reason, so the doctor works on a broken machine.

    >>> part = Part("demo", ("games",), False, "not found", "apt-get install demo")
    >>> part.line()
    '[MISSING] demo (games): not found\\n            fix: apt-get install demo'
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Part:
    """One system part: which families need it, whether it works here, and the fix."""

    name: str
    families: tuple[str, ...]
    ok: bool
    detail: str
    fix: str = ""

    def line(self) -> str:
        mark = "ok     " if self.ok else "MISSING"
        text = f"[{mark}] {self.name} ({', '.join(self.families)}): {self.detail}"
        return text if self.ok else f"{text}\n            fix: {self.fix}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _bubblewrap() -> Part:
    path = shutil.which("bwrap")
    fix = "apt-get install bubblewrap"
    if path is None:
        return Part("bubblewrap", ("code",), False, "bwrap is not on PATH", fix)
    return Part("bubblewrap", ("code",), True, path, fix)


def _chromium() -> Part:
    fix = "apt-get install chromium   (or set AGENTGYM_CHROMIUM=/path/to/chromium)"
    try:
        from agentgym.simulators.browser.runtime import find_chromium
    except ImportError as exc:  # the web extra is missing: the web packages part says so
        return Part("chromium", ("web",), False, f"cannot look for it ({exc})", fix)
    try:
        path = find_chromium()
        out = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except Exception as exc:
        return Part("chromium", ("web",), False, str(exc), fix)
    if out.returncode != 0:
        return Part("chromium", ("web",), False, f"{path} --version exited {out.returncode}", fix)
    return Part("chromium", ("web",), True, f"{path} ({out.stdout.strip()})", fix)


def _playwright() -> Part:
    fix = "pip install 'agentgym-suite[web]'   (Playwright drives the system Chromium; no download)"
    if importlib.util.find_spec("playwright") is None:
        return Part("playwright", ("web",), False, "the Python package is not installed", fix)
    from importlib.metadata import version

    return Part("playwright", ("web",), True, f"playwright {version('playwright')}", fix)


def _fonts() -> Part:
    """Chromium draws pages with system fonts; the visual family uses Pillow's FreeType font."""
    fix = "apt-get install fonts-dejavu-core; pip install --force-reinstall pillow (FreeType)"
    from PIL import features

    if not features.check("freetype2"):
        return Part("fonts", ("visual", "web"), False, "Pillow was built without FreeType", fix)
    fc_list = shutil.which("fc-list")
    if fc_list is None:
        return Part("fonts", ("visual", "web"), False, "fc-list (fontconfig) not found", fix)
    try:
        out = subprocess.run([fc_list], capture_output=True, text=True, timeout=30, check=False)
        count = len([line for line in out.stdout.splitlines() if line.strip()])
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Part("fonts", ("visual", "web"), False, f"fc-list failed: {exc}", fix)
    if count == 0:
        return Part("fonts", ("visual", "web"), False, "no system fonts (fc-list is empty)", fix)
    return Part("fonts", ("visual", "web"), True, f"{count} system fonts; Pillow has FreeType", fix)


def _tesseract() -> Part:
    from agentgym.simulators.visual.ocr import OcrError, tesseract_version

    fix = "apt-get install tesseract-ocr tesseract-ocr-eng; pip install 'agentgym-suite[visual]'"
    try:
        with warnings.catch_warnings():  # the doctor reports it below; no second warning
            warnings.simplefilter("ignore", RuntimeWarning)
            version = tesseract_version()
        return Part("tesseract", ("visual",), True, f"tesseract {version}", fix)
    except OcrError as exc:
        return Part("tesseract", ("visual",), False, str(exc), fix)


def _torch() -> Part:
    fix = "pip install torch --index-url https://download.pytorch.org/whl/cpu   (or a CUDA build)"
    try:
        import torch
    except Exception as exc:
        return Part("torch", ("train",), False, f"cannot import torch ({exc})", fix)
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    where = f"{gpus} CUDA GPU(s)" if gpus else "CPU only (train --device cpu)"
    return Part("torch", ("train",), True, f"torch {torch.__version__}, {where}", fix)


#: The Python modules a family imports beyond the core install, and the extra that has them.
FAMILY_MODULES: dict[str, tuple[tuple[str, ...], str]] = {
    "code": (("sympy", "pyseccomp"), "code"),
    "search": (("bm25s",), "search"),
    "visual": (("pytesseract",), "visual"),
    "web": (("starlette", "uvicorn", "bm25s", "rapidfuzz"), "web"),
}


def _packages() -> list[Part]:
    """One part per family with Python packages beyond the core install."""
    parts = []
    for family, (modules, extra) in FAMILY_MODULES.items():
        fix = f"pip install 'agentgym-suite[{extra}]'"
        missing = [m for m in modules if importlib.util.find_spec(m) is None]
        detail = f"not installed: {', '.join(missing)}" if missing else ", ".join(modules)
        parts.append(Part(f"{family} packages", (family,), not missing, detail, fix))
    return parts


def _sandbox() -> Part:
    """Whether the code sandbox can isolate code here (its required layers)."""
    from agentgym.simulators.sandbox.layers import REQUIRED, detect_layers

    fix = "run as root with bubblewrap and pyseccomp (`agentgym doctor` lists every layer)"
    layers = detect_layers()
    missing = [name for name in REQUIRED if not layers[name].active]
    if missing:
        return Part("sandbox", ("code", "repo"), False, f"missing {', '.join(missing)}", fix)
    return Part("sandbox", ("code", "repo"), True, "every required layer is active", fix)


CHECKS: tuple[Callable[[], Part | list[Part]], ...] = (
    _bubblewrap,
    _sandbox,
    _chromium,
    _playwright,
    _fonts,
    _tesseract,
    _packages,
    _torch,
)


def check_parts(skip: tuple[str, ...] = ()) -> list[Part]:
    """Run every check (but those named in ``skip``, e.g. ``("torch",)``); a check that
    itself fails reports its part as missing."""
    parts: list[Part] = []
    for check in CHECKS:
        name = check.__name__.lstrip("_")
        if name in skip:
            continue
        try:
            found = check()
        except Exception as exc:  # the doctor must work on a broken machine
            found = Part(name, ("?",), False, f"{type(exc).__name__}: {exc}", "see above")
        parts.extend(found if isinstance(found, list) else [found])
    return parts


def missing_for(family: str, parts: list[Part]) -> list[Part]:
    """The parts ``family`` needs that are missing here."""
    return [p for p in parts if not p.ok and family in p.families]


def environment_notes() -> list[str]:
    """Lines about agentgym variables that are set (they change what the checks find)."""
    return [
        f"{name}={os.environ[name]}"
        for name in ("AGENTGYM_CHROMIUM", "AGENTGYM_BROWSER_SANDBOX")
        if name in os.environ
    ]
