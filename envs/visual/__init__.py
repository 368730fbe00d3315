"""Visual reasoning with tools: zoom, OCR, grounding and measuring on rendered images.

=================  ==========================================================================
ids                ``agentgym/Visual{Doc,Chart,Table,Objects,Signs,Clock,Gauge,Geometry,Maze,Lines}-v0``
kwargs             ``difficulty`` ("easy" | "medium" | "hard"), ``grounding_noise`` (0..1),
                   ``max_calls_per_turn`` (1..8), ``ocr_turn_mpx`` / ``ocr_episode_mpx``
                   (OCR budgets in megapixels read, default 4.5 / 9.0; None: off)
action             tool calls ``<tool_call>{"name": "zoom", "arguments": {...}}</tool_call>``
                   (up to 4 per turn), then ``<answer>...</answer>``
observation        text + images: the 640x480 view at reset, each tool's output image after
turn budget        8 turns, then truncated
reward range       about -0.5 .. 1.5 per step
=================  ==========================================================================

Each task renders a high-resolution source image (3x or 4x the view per side) from its seed,
with exact ground truth (answer, the box of the detail asked about, a scene graph of every
object drawn). The agent sees a downscaled view in which that detail is not legible, so it has
to zoom or OCR the original; a quarter of the tasks are drawn large enough to answer at a
glance, so that an agent also learns when *not* to call a tool.

Observations
    At reset: the question, the answer format and the view size, plus the view image. After a
    turn of tool calls: one result per call (text; zoom/rotate/enhance/ground/draw also return
    an image), or what was wrong with the call. After the answer: whether it was right.

Actions
    Tools (coordinates are view pixels; boxes ``[x0, y0, x1, y1]``): ``zoom(box, scale?)``,
    ``ocr(box, angle?, enhance?)`` (tesseract on the original), ``ground(query)`` (boxes of the
    scene-graph objects whose label has every word of the query; ``grounding_noise`` jitters
    and drops results), ``measure(points)`` (distance or angle), ``color_stats(box)``,
    ``rotate(box, angle)``, ``enhance(box, contrast?, sharpen?, invert?)``, ``draw(grid?,
    marks?, lines?)`` and ``calculate(expression)``. Bad arguments (NaN, zero-area or
    off-image boxes, huge zoom) give a tool error in the observation, never an exception.

Rewards (component: default weight)
    * ``outcome`` (1.0): 1 when the answer matches (exact text, exact integer, or a number
      within the task's tolerance).
    * ``format`` (0.1): -1 for a turn with a parse error, a bad tool argument, too many calls,
      or neither a call nor an answer.
    * ``zoom`` (0.1): +1 the first time a zoom/rotate/enhance/ocr region contains the true box
      of the detail asked about (regions over a quarter of the view do not count).
    * ``ocr`` (0.1): +1 for each text region the answer is read from, the first time an OCR
      call covers it (same size limit).
    * ``redundant`` (0.05): -1 for each call identical to an earlier one in the episode.
    * ``tool`` (0.2): 1 when the answer is right, the task needed tools and an image tool
      (anything but ``calculate``) was used successfully.

Tasks
    Seeded: task ``visual-<type>-<difficulty>-<seed>``; train seeds 0..99,999, test seeds
    100,000..100,999. Difficulty sets the clutter and the shrink factor (3x easy/medium, 4x
    hard).

Version History
    * v0: first release.
"""

from agentgym.registry import register

#: id name -> (task type, description)
VISUAL_ENVS = {
    "VisualDoc": ("doc", "read one record's code on a dense tiny-text page"),
    "VisualChart": ("chart", "read the exact value printed on a bar or point of a chart"),
    "VisualTable": ("table", "read or add cells of a dense table"),
    "VisualObjects": ("objects", "count small coloured shapes or say where two stand"),
    "VisualSigns": ("signs", "read a rotated or faint word on a framed label"),
    "VisualClock": ("clock", "read the time on a small analogue clock"),
    "VisualGauge": ("gauge", "read one dial's needle on an instrument panel against fine ticks"),
    "VisualGeometry": ("geometry", "measure a side or an angle of a triangle drawn to scale"),
    "VisualMaze": ("maze", "count the moves of the shortest path through a fine maze"),
    "VisualLines": ("lines", "follow a thin tangled line from a letter to a number"),
}

for _name, (_task_type, _description) in VISUAL_ENVS.items():
    register(
        f"agentgym/{_name}-v0",
        "agentgym.envs.visual.env:VisualEnv",
        family="visual",
        modality="vision",
        kwargs={"task_type": _task_type},
        description=_description,
    )
