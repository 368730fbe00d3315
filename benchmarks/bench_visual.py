"""Visual family: render and step latency, OCR latency, and the oracle vs no-tool gap.

Measured per task type on the test split (seeds 100,000+):

* reset latency (render the high-resolution source, shrink it to the view, build the
  observation) and the latency of the oracle's tool steps, on one core;
* tesseract OCR latency per call (the ``ocr`` tool on a small region);
* success of the tool-using oracle (``VisualEnv.oracle_action``: it locates the detail from
  the scene graph, zooms, reads text with its own OCR calls and answers with what they
  returned) against the **baseline**, a no-tool policy that answers at once from the
  downscaled view (``agentgym.envs.visual.baseline``: real OCR of the view for text tasks,
  an idealised view reader for pixel tasks).
"""

from __future__ import annotations

import os
import resource
import statistics
import time

from agentgym.envs.visual.baseline import no_tool_answer
from agentgym.envs.visual.env import VisualEnv
from agentgym.envs.visual.grading import is_correct
from agentgym.simulators.visual.tasks import TASK_TYPES
from agentgym.simulators.visual.tools import run_tool


def _median_ms(values: list[float]) -> float:
    return 1000 * statistics.median(values) if values else float("nan")


def _cpu() -> float:
    """CPU seconds of this process and its finished children (tesseract runs as a child)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _episode(
    env: VisualEnv, task_id: str
) -> tuple[bool, float, float, list[float], int, float, float]:
    """Run the oracle: success, reset s, episode s, tool-step s, calls, reset CPU s, episode CPU s."""
    c0 = _cpu()
    t0 = time.perf_counter()
    env.reset(options={"task_id": task_id})
    reset_s = time.perf_counter() - t0
    reset_cpu = _cpu() - c0
    steps: list[float] = []
    calls = 0
    info: dict = {}
    for _ in range(env.max_turns or 8):
        action = env.oracle_action()
        t = time.perf_counter()
        _, _, terminated, truncated, info = env.step(action)
        if info["tool_calls"]:
            steps.append(time.perf_counter() - t)
            calls += len(info["tool_calls"])
        if terminated or truncated:
            break
    episode_s = time.perf_counter() - t0
    return bool(info.get("success")), reset_s, episode_s, steps, calls, reset_cpu, _cpu() - c0


def run(quick: bool = False) -> str:
    """Measure every task type (8 tasks each when ``quick``, else 40); a markdown section."""
    n = 8 if quick else 40
    load = os.getloadavg()[0]
    rows = []
    totals = {"oracle": 0, "baseline": 0, "oracle_tool": 0, "baseline_tool": 0, "n": 0, "n_tool": 0}
    ocr_times: list[float] = []
    ocr_cpu: list[float] = []
    for task_type in TASK_TYPES:
        env = VisualEnv(task_type=task_type, split="test")
        ids = env.task_ids("test")[:n]
        env.reset(options={"task_id": ids[0]})  # warm the glyph atlases
        resets, episodes, steps, reset_cpu, episode_cpu = [], [], [], [], []
        oracle_ok = base_ok = oracle_tool_ok = base_tool_ok = need = calls = 0
        for task_id in ids:
            ok, reset_s, episode_s, step_s, n_calls, r_cpu, e_cpu = _episode(env, task_id)
            scene = env.scene
            resets.append(reset_s)
            episodes.append(episode_s)
            reset_cpu.append(r_cpu)
            episode_cpu.append(e_cpu)
            steps += step_s
            calls += n_calls
            base = is_correct(
                no_tool_answer(scene), scene.answer, scene.answer_type, scene.tolerance
            )
            oracle_ok += ok
            base_ok += base
            if scene.needs_tools:
                need += 1
                oracle_tool_ok += ok
                base_tool_ok += base
            if scene.readouts and len(ocr_times) < 60:
                vb = scene.to_view(scene.readouts[0].box)
                c, t = _cpu(), time.perf_counter()
                run_tool(scene, "ocr", {"box": [vb[0] - 2, vb[1] - 2, vb[2] + 2, vb[3] + 2]})
                ocr_times.append(time.perf_counter() - t)
                ocr_cpu.append(_cpu() - c)
        rows.append(
            f"| {task_type} | {_median_ms(reset_cpu):.0f} ({_median_ms(resets):.0f}) | "
            f"{_median_ms(steps):.0f} | {_median_ms(episode_cpu):.0f} ({_median_ms(episodes):.0f}) | "
            f"{calls / len(ids):.1f} | {1 - need / len(ids):.0%} | "
            f"{oracle_ok / len(ids):.0%} | {base_ok / len(ids):.0%} | "
            f"{oracle_tool_ok / max(1, need):.0%} | {base_tool_ok / max(1, need):.0%} |"
        )
        totals["oracle"] += oracle_ok
        totals["baseline"] += base_ok
        totals["oracle_tool"] += oracle_tool_ok
        totals["baseline_tool"] += base_tool_ok
        totals["n"] += len(ids)
        totals["n_tool"] += need
    n_all, n_tool = totals["n"], max(1, totals["n_tool"])

    def share(k: int, n: int) -> str:
        return f"**{k / n:.1%}** ({k}/{n})"

    rows.append(
        f"| **all** | | | | | {1 - totals['n_tool'] / n_all:.0%} | "
        f"{share(totals['oracle'], n_all)} | {share(totals['baseline'], n_all)} | "
        f"{share(totals['oracle_tool'], n_tool)} | {share(totals['baseline_tool'], n_tool)} |"
    )
    ocr_ms = sorted(1000 * t for t in ocr_times)
    ocr_line = (
        f"OCR (tesseract 5 through pytesseract, one thread, a one-line region): median "
        f"{_median_ms(ocr_cpu):.0f} ms CPU, wall median {statistics.median(ocr_ms):.0f} ms, "
        f"p90 {ocr_ms[int(0.9 * (len(ocr_ms) - 1))]:.0f} ms, over {len(ocr_ms)} calls."
        if ocr_ms
        else "OCR: no calls measured."
    )
    return "\n".join(
        [
            "## Visual tools (agentgym/Visual*-v0)",
            "",
            "Machine: 2-core CPU, no GPU, shared with other jobs (load average "
            f"{load:.1f} during the run, so wall times are inflated; CPU times, which count "
            "tesseract's child processes, are the one-core cost). "
            f"{n} test-split tasks (seeds 100,000+) per task type, difficulty medium. "
            "Baseline: a no-tool policy that answers at once from the 640x480 view (real OCR of "
            "the view for text tasks; an idealised view reader for pixel tasks, see "
            "`agentgym.envs.visual.baseline`). The oracle uses the tools (zoom, OCR, ground, "
            "measure) and answers from what they return for text, counting and measuring tasks.",
            "",
            "Latencies are medians: CPU ms (wall ms).",
            "",
            "| task type | reset (render) ms | tool step wall ms | oracle episode ms | tool calls / episode "
            "| solvable w/o tools | oracle success | no-tool success | oracle, tool-needing "
            "| no-tool, tool-needing |",
            "|---|---|---|---|---|---|---|---|---|---|",
            *rows,
            "",
            ocr_line,
        ]
    )
