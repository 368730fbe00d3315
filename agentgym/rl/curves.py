"""Learning-curve plots: every measured point, a labelled smoothing, and held-out success.

A moving average alone hides what happened: with 3 iterations a 3-point window leaves one
point (a blank plot), and on longer runs it drops the untrained starting points. So each run
is drawn as its raw points plus a *trailing* mean over up to ``smooth`` points (the first
points average what exists so far, so the curve starts at the first iteration), labelled
with its window. Held-out (test-split) success, measured from the untrained policy at env
step 0 onwards, is drawn with its own markers next to it.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

Rows = Sequence[Mapping[str, Any]]


def trailing_mean(values: np.ndarray, window: int) -> np.ndarray:
    """Mean of each point and up to ``window - 1`` points before it (same length as input)."""
    if window <= 1 or len(values) == 0:
        return values.astype(float)
    csum = np.cumsum(np.insert(values.astype(float), 0, 0.0))
    idx = np.arange(1, len(values) + 1)
    lo = np.maximum(0, idx - window)
    return (csum[idx] - csum[lo]) / (idx - lo)


def _series(rows: Rows, x: str, y: str) -> tuple[np.ndarray, np.ndarray]:
    pts = [(float(r[x]), float(r[y])) for r in rows if r.get(y) not in (None, "")]
    if not pts:
        return np.zeros(0), np.zeros(0)
    arr = np.array(pts)
    return arr[:, 0], arr[:, 1]


def _stack(runs: Sequence[Rows], x: str, y: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Several seeds of one run: x averaged, y as ``[seeds, points]`` cut to the shortest."""
    curves = [_series(m, x, y) for m in runs]
    curves = [c for c in curves if len(c[0])]
    if not curves:
        return None
    n = min(len(c[0]) for c in curves)
    xs = np.mean([c[0][:n] for c in curves], axis=0)
    ys = np.array([c[1][:n] for c in curves])
    return xs, ys


@dataclass
class CurveLine:
    """One drawn series: its legend label, points, style and optional min-max band."""

    label: str
    xs: np.ndarray
    ys: np.ndarray
    kind: str
    """``raw`` (training-rollout points), ``smooth`` (their trailing mean) or ``heldout``."""
    style: str
    band: tuple[np.ndarray, np.ndarray] | None = None
    group: str = ""


def curve_lines(
    runs: Mapping[str, Any],
    *,
    x: str = "env_steps",
    y: str = "success",
    smooth: int = 3,
    heldout: Mapping[str, Any] | None = None,
    heldout_y: Sequence[str] = ("test_success", "test_success_greedy"),
) -> list[CurveLine]:
    """The series :func:`plot_curves` draws (see there), without drawing them."""
    lines: list[CurveLine] = []
    for name, metrics in runs.items():
        seeds = metrics if metrics and isinstance(metrics[0], list) else [metrics]
        got = _stack(seeds, x, y)
        if got is None:
            continue
        xs, ys = got
        n = len(seeds)
        mean = ys.mean(0)
        band = (ys.min(0), ys.max(0)) if n > 1 else None
        lines.append(CurveLine(f"{name}: train rollouts (n={n})", xs, mean, "raw", "o", band, name))
        if smooth > 1 and len(xs) > 1:
            label = f"{name}: train, trailing mean of {smooth}"
            lines.append(
                CurveLine(label, xs, trailing_mean(mean, smooth), "smooth", "-", None, name)
            )
    for name, rows in (heldout or {}).items():
        seeds = rows if rows and isinstance(rows[0], list) else [rows]
        for key, style in zip(heldout_y, ("s--", "^:")):
            got = _stack(seeds, x, key)
            if got is None:
                continue
            xs, ys = got
            mode = "greedy" if key.endswith("greedy") else "sampled"
            band = (ys.min(0), ys.max(0)) if len(seeds) > 1 else None
            label = f"{name}: held-out test ({mode})"
            lines.append(CurveLine(label, xs, ys.mean(0), "heldout", style, band, name))
    return lines


def plot_curves(
    runs: Mapping[str, Any],
    path: str | Path,
    *,
    title: str = "",
    x: str = "env_steps",
    y: str = "success",
    smooth: int = 3,
    heldout: Mapping[str, Any] | None = None,
    heldout_y: Sequence[str] = ("test_success", "test_success_greedy"),
) -> bool:
    """Plot ``y`` against ``x`` for each named run, and held-out success if given.

    Args:
        runs: name -> metric rows, or name -> list of row lists (seeds: mean with a min-max
            band).
        heldout: name -> evaluation rows (``eval.csv``), or lists of them per seed.
        smooth: trailing-mean window; 1 draws raw points only.

    Returns False (and warns) when matplotlib is missing.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        warnings.warn("matplotlib is not installed; no learning-curve plot.", stacklevel=2)
        return False
    lines = curve_lines(runs, x=x, y=y, smooth=smooth, heldout=heldout, heldout_y=heldout_y)
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    colors: dict[tuple[str, str], Any] = {}
    for line in lines:
        key = (line.group, "heldout" if line.kind == "heldout" else "train")
        kw: dict[str, Any] = {"label": line.label}
        if key in colors:
            kw["color"] = colors[key]
        if line.kind == "raw":
            kw.update(ms=3, alpha=0.45)
        elif line.kind == "heldout":
            kw.update(ms=5)
        drawn = ax.plot(line.xs, line.ys, line.style, **kw)[0]
        colors.setdefault(key, drawn.get_color())
        if line.band is not None:
            ax.fill_between(line.xs, *line.band, alpha=0.15, color=drawn.get_color())
    ax.set_xlabel(x.replace("_", " "))
    ax.set_ylabel("success rate")
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlim(left=0)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if lines:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
