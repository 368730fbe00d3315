"""Learning-curve plots: success, return and loss, each point measured, every line named.

A run's ``curve.png`` has three panels over the same x axis (env steps; iterations for a run
that takes no env steps, such as SFT): **success** (training rollouts and, if measured,
held-out test-split success, greedy and sampled), **return** (mean episode return of the
training rollouts) and **loss** (the training loss of each iteration). What goes up in a
learning run is success and return; the loss goes down for SFT and moves around zero for
PPO-clip, whose loss is not a progress measure.

A moving average alone hides what happened: with 3 iterations a 3-point window leaves one
point (a blank plot), and on longer runs it drops the untrained starting points. So each
series is drawn as its raw points plus a *trailing* mean over up to ``smooth`` points (the
first points average what exists so far, so the curve starts at the first iteration),
labelled with its window. Legends say what each line is and how it was measured (e.g.
"held-out test success (greedy, 100 episodes)"); several seeds of a run are averaged with a
min-max band, and the legend says how many.
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


@dataclass(frozen=True)
class Panel:
    """One panel of the curve: the metric column it plots and how it is titled."""

    metric: str
    title: str
    ylabel: str
    ylim: tuple[float, float] | None = None
    series: str = "training rollouts"
    """What the metric's points are, for the legend."""


#: The panels of ``curve.png``, top to bottom.
PANELS = (
    Panel("success", "Success rate", "fraction of episodes solved", (-0.03, 1.03)),
    Panel("return_mean", "Return", "mean episode return"),
    Panel("loss", "Training loss", "mean loss per update", series="training loss"),
)


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


def _as_seeds(rows: Any) -> list[Rows]:
    """A run's rows, or its seeds' rows: always a list of row lists."""
    return rows if rows and isinstance(rows[0], list) else [rows]


def _seeds_note(n: int) -> str:
    return f"; mean of {n} seeds, band min-max" if n > 1 else ""


def _episodes_note(seeds: Sequence[Rows]) -> str:
    """ ", 100 episodes" from the evaluation rows' ``test_episodes`` (when they all agree)."""
    counts = {str(r.get("test_episodes", "")) for rows in seeds for r in rows}
    return f", {counts.pop()} episodes" if len(counts) == 1 and "" not in counts else ""


def curve_lines(
    runs: Mapping[str, Any],
    *,
    x: str = "env_steps",
    y: str = "success",
    smooth: int = 3,
    heldout: Mapping[str, Any] | None = None,
    heldout_y: Sequence[str] = ("test_success", "test_success_greedy"),
    series: str = "training rollouts",
) -> list[CurveLine]:
    """The series one panel of :func:`plot_curves` draws (metric ``y``), without drawing.

    ``series`` says what ``y``'s points are (legend text). Labels name the run only when
    there are several (a single run's title names it).
    """
    names = {*runs, *(heldout or {})}
    lines: list[CurveLine] = []
    for name, metrics in runs.items():
        seeds = _as_seeds(metrics)
        got = _stack(seeds, x, y)
        if got is None:
            continue
        xs, ys = got
        n = len(seeds)
        who = f"{name}: " if len(names) > 1 else ""
        mean = ys.mean(0)
        band = (ys.min(0), ys.max(0)) if n > 1 else None
        label = f"{who}{series} (each iteration{_seeds_note(n)})"
        lines.append(CurveLine(label, xs, mean, "raw", "o", band, name))
        if smooth > 1 and len(xs) > 1:
            label = f"{who}{series}, trailing mean of {smooth} iterations"
            lines.append(
                CurveLine(label, xs, trailing_mean(mean, smooth), "smooth", "-", None, name)
            )
    for name, rows in (heldout or {}).items():
        seeds = _as_seeds(rows)
        who = f"{name}: " if len(names) > 1 else ""
        for key, style in zip(heldout_y, ("s--", "^:")):
            got = _stack(seeds, x, key)
            if got is None:
                continue
            xs, ys = got
            mode = "greedy" if key.endswith("greedy") else "sampled"
            band = (ys.min(0), ys.max(0)) if len(seeds) > 1 else None
            label = (
                f"{who}held-out test success ({mode}{_episodes_note(seeds)}"
                f"{_seeds_note(len(seeds))})"
            )
            lines.append(CurveLine(label, xs, ys.mean(0), "heldout", style, band, name))
    return lines


def x_axis(runs: Mapping[str, Any], heldout: Mapping[str, Any] | None, x: str) -> str:
    """``x``, or ``iteration`` when ``x`` never moves (an SFT run takes no env steps)."""
    values = {
        r.get(x)
        for source in (runs, heldout or {})
        for rows in source.values()
        for seed in _as_seeds(rows)
        for r in seed
    }
    return x if len({float(v) for v in values if v not in (None, "")}) > 1 else "iteration"


def curve_figure(
    runs: Mapping[str, Any],
    *,
    title: str = "",
    x: str = "env_steps",
    smooth: int = 3,
    heldout: Mapping[str, Any] | None = None,
    heldout_y: Sequence[str] = ("test_success", "test_success_greedy"),
    panels: Sequence[Panel] = PANELS,
) -> Any:
    """The learning-curve figure (a matplotlib ``Figure``, one panel per entry of ``panels``).

    Held-out success is drawn in the ``success`` panel. A panel with nothing to draw (the
    return of an SFT run, which plays no episodes) says so instead of staying blank. Raises
    ImportError without matplotlib.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    x = x_axis(runs, heldout, x)
    fig, axes = plt.subplots(len(panels), 1, figsize=(7, 2.7 * len(panels) + 0.6), sharex=True)
    axes = np.atleast_1d(axes)
    for ax, panel in zip(axes, panels):
        shown = heldout if panel.metric == "success" else None
        lines = curve_lines(
            runs,
            x=x,
            y=panel.metric,
            smooth=smooth,
            heldout=shown,
            heldout_y=heldout_y,
            series=panel.series,
        )
        _draw(ax, lines)
        ax.set_title(panel.title, fontsize=10, loc="left")
        ax.set_ylabel(panel.ylabel, fontsize=8)
        if panel.ylim is not None:
            ax.set_ylim(*panel.ylim)
        ax.grid(alpha=0.3)
        if lines:
            ax.legend(fontsize=7)
        else:
            ax.text(
                0.5,
                0.5,
                f"no {panel.series} in this run",
                transform=ax.transAxes,
                ha="center",
                va="center",
                color="#667",
            )
    axes[-1].set_xlabel("env steps" if x == "env_steps" else x.replace("_", " "))
    axes[-1].set_xlim(left=0)
    if x == "iteration":
        axes[-1].xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def _draw(ax: Any, lines: Sequence[CurveLine]) -> None:
    """Draw the lines on one panel: a run's raw points and smoothing share a colour, each
    held-out mode (greedy, sampled) has its own."""
    colors: dict[tuple[str, str], Any] = {}
    for line in lines:
        key = (line.group, line.style if line.kind == "heldout" else "train")
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


def plot_curves(runs: Mapping[str, Any], path: str | Path, **figure: Any) -> bool:
    """Save the learning curve of each named run to ``path``.

    Args:
        runs: name -> metric rows (``metrics.csv``), or name -> list of row lists (seeds:
            mean with a min-max band).
        figure: keyword arguments of :func:`curve_figure` (``title``, ``x``, ``smooth``:
            the trailing-mean window, 1 draws raw points only; ``heldout``: name ->
            evaluation rows (``eval.csv``) or lists of them per seed; ``heldout_y``;
            ``panels``: which metrics get a panel, default success, return, loss).

    Returns False (and warns) when matplotlib is missing.
    """
    try:
        fig = curve_figure(runs, **figure)
    except ImportError:
        warnings.warn("matplotlib is not installed; no learning-curve plot.", stacklevel=2)
        return False
    import matplotlib.pyplot as plt

    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
