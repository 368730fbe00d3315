"""curve.png (issue 26, point 9): success, return and loss in their own panels, and legends
that say what each line is and how it was measured (no bare "n=1")."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from agentgym.algos.curves import curve_figure, plot_curves

pytest.importorskip("matplotlib")

ROWS = [
    {"iteration": i + 1, "env_steps": 100 * (i + 1), "success": s, "return_mean": r, "loss": loss}
    for i, (s, r, loss) in enumerate([(0.1, -1.0, 0.9), (0.4, 0.5, 0.6), (0.7, 2.0, 0.2)])
]
EVALS = [
    {
        "iteration": i,
        "env_steps": 100 * i,
        "test_success": s,
        "test_success_greedy": g,
        "test_episodes": 100,
    }
    for i, s, g in [(0, 0.05, 0.0), (3, 0.5, 0.6)]
]


def _legend(ax: Any) -> list[str]:
    legend = ax.get_legend()
    return [] if legend is None else [t.get_text() for t in legend.get_texts()]


def _close(fig: Any) -> None:
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_three_panels_with_self_explaining_legends() -> None:
    fig = curve_figure({"gigpo": ROWS}, heldout={"gigpo": EVALS}, title="Sokoban (gigpo)")
    success, ret, loss = fig.axes
    assert [ax.get_title(loc="left") for ax in fig.axes] == [
        "Success rate",
        "Return",
        "Training loss",
    ]
    assert _legend(success) == [
        "training rollouts (each iteration)",
        "training rollouts, trailing mean of 3 iterations",
        "held-out test success (sampled, 100 episodes)",
        "held-out test success (greedy, 100 episodes)",
    ]
    assert _legend(ret) == _legend(success)[:2]  # held-out: in the success panel only
    assert _legend(loss) == [
        "training loss (each iteration)",
        "training loss, trailing mean of 3 iterations",
    ]
    # greedy and sampled are told apart by colour too, not only by marker
    assert success.lines[2].get_color() != success.lines[3].get_color()
    assert not any("n=" in text for ax in fig.axes for text in _legend(ax))
    # each panel plots its own column, raw then a trailing mean that starts at the first point
    assert list(ret.lines[0].get_ydata()) == [-1.0, 0.5, 2.0]
    assert list(ret.lines[1].get_ydata()) == [-1.0, -0.25, 0.5]
    assert list(loss.lines[0].get_ydata()) == [0.9, 0.6, 0.2]
    greedy = success.lines[3]
    assert list(greedy.get_xdata()) == [0, 300] and list(greedy.get_ydata()) == [0.0, 0.6]
    assert loss.get_xlabel() == "env steps" and success.get_ylim() == (-0.03, 1.03)
    assert fig._suptitle.get_text() == "Sokoban (gigpo)"
    _close(fig)


def test_seeds_and_several_runs_are_named() -> None:
    lower = [{**r, "success": r["success"] / 2} for r in ROWS]
    fig = curve_figure({"gigpo": [ROWS, lower], "grpo": ROWS}, smooth=1)
    labels = _legend(fig.axes[0])
    assert labels == [
        "gigpo: training rollouts (each iteration; mean of 2 seeds, band min-max)",
        "grpo: training rollouts (each iteration)",
    ]
    assert np.allclose(fig.axes[0].lines[0].get_ydata(), [0.075, 0.3, 0.525])
    _close(fig)


def test_an_sft_run_is_plotted_against_iterations() -> None:
    sft = [
        {"iteration": i, "env_steps": 0, "success": "", "return_mean": "", "loss": loss}
        for i, loss in [(1, 2.0), (2, 1.0)]
    ]
    evals = [{**e, "env_steps": 0, "iteration": i} for e, i in zip(EVALS, (0, 2))]
    fig = curve_figure({"sft": sft}, heldout={"sft": evals})
    success, ret, loss = fig.axes
    assert loss.get_xlabel() == "iteration"
    assert list(success.lines[0].get_xdata()) == [0, 2]  # held-out points spread, not at 0
    assert [t.get_text() for t in ret.texts] == ["no training rollouts in this run"]
    assert all(float(t).is_integer() for t in loss.get_xticks())  # epochs, not 2.5
    assert list(loss.lines[0].get_ydata()) == [2.0, 1.0]
    _close(fig)


def test_plot_curves_writes_the_png(tmp_path) -> None:
    path = tmp_path / "curve.png"
    assert plot_curves({"gigpo": ROWS}, path, heldout={"gigpo": EVALS})
    from matplotlib.image import imread

    height, width = imread(path).shape[:2]
    assert height > width  # the three panels stacked
