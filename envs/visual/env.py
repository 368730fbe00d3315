"""The visual env: one procedurally rendered image, nine tools, an exactly graded answer.

The env is thin: the image, its ground truth and the tools live in
:mod:`agentgym.simulators.visual`; here are the episode (tool calls until an answer), the
rewards and the observation text. Each task type is registered as its own id; the module
docstring of :mod:`agentgym.envs.visual` is the card.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Unpack

import numpy as np
from agentgym.envs.visual.grading import is_correct
from agentgym.simulators.visual.scene import Box, Scene, box_area, contains, pad_box
from agentgym.simulators.visual.tasks import DIFFICULTIES, TASK_TYPES, generate
from agentgym.simulators.visual.tools import TOOLS, ToolResult, run_tool

from agentgym.core import AgentEnv, BaseOptions, ResetOutcome, StepOutcome
from agentgym.error import InvalidConfigError
from agentgym.parsing import ParsedAction, Tool, render_answer, render_tool_call
from agentgym.tasks import SeededTaskSet, seeded_splits

#: A located region earns step credit only if it is at most this share of the view's area.
MAX_CREDIT_AREA = 0.25
#: Default OCR budgets in megapixels handed to tesseract (about 0.5 s of CPU per MP). One
#: call reads at most 4 MP, so a turn may read one whole page and an episode about two; the
#: reference oracle reads under 0.05 MP an episode with tight boxes.
OCR_TURN_MPX = 4.5
OCR_EPISODE_MPX = 9.0
#: Tools whose region counts as "looking closely" for the zoom step reward.
LOOKING_TOOLS = frozenset({"zoom", "rotate", "enhance", "ocr"})

SYSTEM_PROMPT = """You answer questions about an image. The image you see is a downscaled view of a \
high-resolution original: small details may be unreadable in it. Tools work on the original, \
with coordinates in pixels of the view you see (x to the right, y down; boxes are \
[x0, y0, x1, y1]). Call tools like this (up to {max_calls} per turn):
{example}
When you know the answer, reply with <answer>...</answer>; that ends the episode. Only call a \
tool when the view is not enough: some questions can be answered at a glance."""


class VisualEnv(AgentEnv):
    """Answer one question about a rendered image, using visual tools where needed."""

    metadata: ClassVar[dict[str, Any]] = {"family": "visual", "render_modes": ["ansi"]}  # type: ignore[misc]
    default_reward_weights: ClassVar[Mapping[str, float]] = {
        "outcome": 1.0,
        "format": 0.1,
        "zoom": 0.1,
        "ocr": 0.1,
        "redundant": 0.05,
        "tool": 0.2,
    }
    default_max_turns: ClassVar[int | None] = 8
    answers_in_text: ClassVar[bool] = True

    def __init__(
        self,
        *,
        task_type: str = "doc",
        difficulty: str = "medium",
        grounding_noise: float = 0.0,
        max_calls_per_turn: int = 4,
        ocr_turn_mpx: float | None = OCR_TURN_MPX,
        ocr_episode_mpx: float | None = OCR_EPISODE_MPX,
        **base: Unpack[BaseOptions],
    ):
        if task_type not in TASK_TYPES:
            raise InvalidConfigError(
                f"task_type {task_type!r} is unknown; choose from {sorted(TASK_TYPES)}."
            )
        if difficulty not in DIFFICULTIES:
            raise InvalidConfigError(
                f"difficulty {difficulty!r} is unknown; choose from {list(DIFFICULTIES)}."
            )
        if not 0.0 <= grounding_noise <= 1.0:
            raise InvalidConfigError(f"grounding_noise must be in [0, 1], got {grounding_noise}.")
        if not 1 <= max_calls_per_turn <= 8:
            raise InvalidConfigError(f"max_calls_per_turn must be 1..8, got {max_calls_per_turn}.")
        budgets = {"ocr_turn_mpx": ocr_turn_mpx, "ocr_episode_mpx": ocr_episode_mpx}
        for name, value in budgets.items():
            if value is not None and not (isinstance(value, int | float) and 0 <= value < 1e6):
                raise InvalidConfigError(
                    f"{name} must be None or 0..1e6 megapixels, got {value!r}."
                )
        super().__init__(**base)
        self.task_type = task_type
        self.difficulty = difficulty
        self.grounding_noise = float(grounding_noise)
        self.max_calls_per_turn = int(max_calls_per_turn)
        self.ocr_turn_px = None if ocr_turn_mpx is None else round(ocr_turn_mpx * 1e6)
        self.ocr_episode_px = None if ocr_episode_mpx is None else round(ocr_episode_mpx * 1e6)
        self._ocr_spent = 0  # OCR pixels read this episode
        self._splits = seeded_splits(f"visual-{task_type}-{difficulty}")
        self._scene: Scene | None = None
        self._scene_task: str | None = None
        self._calls: set[str] = set()
        self._zoomed = False
        self._ocr_read: dict[int, str] = {}  # readout index -> OCR text of a call covering it
        self._ground_text: dict[str, str] = {}  # query -> last grounding output (for the oracle)
        self._used_tool = False
        self._measured = ""  # the last measure result's value (for the oracle)

    # ---- task set --------------------------------------------------------------------------

    def task_ids(self, split: str | None = None) -> Sequence[str]:
        return self._splits[split or self.split]

    @property
    def tools(self) -> Sequence[Tool]:
        return tuple(TOOLS.values())

    @property
    def scene(self) -> Scene:
        """The current task's scene (ground truth included: for oracles, tests and tooling)."""
        if self._scene is None:
            raise InvalidConfigError("Call reset() before reading the scene.")
        return self._scene

    def _load_scene(self, task_id: str) -> Scene:
        if self._scene is None or self._scene_task != task_id:
            self._scene = generate(self.task_type, SeededTaskSet.seed_of(task_id), self.difficulty)
            self._scene_task = task_id
        return self._scene

    # ---- episode ---------------------------------------------------------------------------

    def _reset(self, task_id: str, options: Mapping[str, Any]) -> ResetOutcome:
        scene = self._load_scene(task_id)
        self._calls = set()
        self._zoomed = False
        self._ocr_read = {}
        self._ground_text = {}
        self._used_tool = False
        self._measured = ""
        self._ocr_spent = 0
        width, height = scene.view_size
        instruction = f"{scene.question} {scene.hint}".strip()
        text = (
            f"{instruction}\nThe image is {width}x{height} view pixels (the original has "
            f"{scene.scale}x more detail per side)."
        )
        example = render_tool_call("zoom", {"box": [10, 20, 110, 95]})
        prompt = SYSTEM_PROMPT.format(max_calls=self.max_calls_per_turn, example=example)
        return ResetOutcome(
            text=text,
            instruction=instruction,
            system_prompt=prompt,
            images=(scene.view.copy(),),
            info={"task_type": self.task_type, "difficulty": self.difficulty},
        )

    def _step(self, action: ParsedAction) -> StepOutcome:
        scene = self.scene
        problems = list(action.errors)
        calls = list(action.tool_calls)
        if action.empty and not problems:
            problems.append(
                "no tool call and no answer: call a tool, e.g. "
                + render_tool_call("zoom", {"box": [0, 0, 100, 100]})
                + ", or answer with <answer>...</answer>."
            )
        if len(calls) > self.max_calls_per_turn:
            problems.append(
                f"{len(calls)} tool calls in one turn; only the first {self.max_calls_per_turn} were run."
            )
            calls = calls[: self.max_calls_per_turn]
        components: dict[str, float] = {"redundant": 0.0, "zoom": 0.0, "ocr": 0.0}
        system_errors: list[str] = []
        lines: list[str] = []
        images: list[np.ndarray] = []
        turn_spent = 0
        if action.answer is not None and calls:
            lines.append("An answer ends the episode; the tool calls of this turn were not run.")
            calls = []
        for i, call in enumerate(calls, start=1):
            key = call.name + json.dumps(call.arguments, sort_keys=True, default=str)
            prefix = f"[{i}] {call.name}: " if len(calls) > 1 else ""
            if key in self._calls:
                components["redundant"] -= 1.0
                lines.append(prefix + "you already made this exact call; its result is above.")
                continue
            self._calls.add(key)
            result = run_tool(
                scene,
                call.name,
                call.arguments,
                noise=self.grounding_noise,
                seed=scene.seed,
                ocr_budget_px=self._ocr_left(turn_spent),
            )
            turn_spent += result.cost
            self._ocr_spent += result.cost
            if result.over_budget:  # not run, so neither penalised nor counted as made
                self._calls.discard(key)
                lines.append(prefix + result.text)
                continue
            if not result.ok:
                problems.append(str(result.error))
                continue
            if result.system_error:  # the host's fault (no tesseract): reported, not penalised
                self._calls.discard(key)  # nor is a retry after the host is fixed
                system_errors.append(result.system_error)
                lines.append(prefix + result.text)
                continue
            if call.name != "calculate":  # arithmetic alone does not look at the image
                self._used_tool = True
            lines.append(prefix + result.text)
            if result.image is not None:
                images.append(result.image)
            self._credit(call.name, call.arguments, result, components)
        if action.answer is None:
            if problems:
                lines.append("Problem: " + "\n".join(problems))
            text = "\n".join(lines) if lines else "Nothing to do."
            return StepOutcome(
                text=text,
                images=tuple(images),
                components=components,
                action_valid=not problems,
                error="\n".join(problems) if problems else None,
                info={"system_error": system_errors[0]} if system_errors else {},
            )
        correct = is_correct(action.answer, scene.answer, scene.answer_type, scene.tolerance)
        components["outcome"] = 1.0 if correct else 0.0
        components["tool"] = 1.0 if correct and scene.needs_tools and self._used_tool else 0.0
        verdict = "correct" if correct else f"wrong (expected {scene.answer})"
        lines.append(f"Your answer {action.answer[:100]!r} is {verdict}.")
        if problems:
            lines.append("Problem: " + "\n".join(problems))
        return StepOutcome(
            text="\n".join(lines),
            components=components,
            terminated=True,
            success=correct,
            action_valid=not problems,
            error="\n".join(problems) if problems else None,
            info={"system_error": system_errors[0]} if system_errors else {},
        )

    def _ocr_left(self, turn_spent: int) -> int | None:
        """OCR pixels this call may still read (the tighter of the turn and episode budgets)."""
        left = [
            budget - spent
            for budget, spent in (
                (self.ocr_turn_px, turn_spent),
                (self.ocr_episode_px, self._ocr_spent),
            )
            if budget is not None
        ]
        return min(left) if left else None

    def _credit(
        self, name: str, args: Mapping[str, Any], result: ToolResult, comps: dict[str, float]
    ) -> None:
        """Step rewards that are exactly checkable against the scene graph."""
        scene = self.scene
        region = result.region
        if region is None:
            if name == "ground":
                self._ground_text[str(args.get("query", ""))] = result.text
            if name == "measure":
                self._measured = _measured_value(result.text)
            return
        width, height = scene.view_size
        tight = box_area(region) <= MAX_CREDIT_AREA * width * height
        if (
            name in LOOKING_TOOLS
            and scene.target is not None
            and not self._zoomed
            and tight
            and contains(region, scene.to_view(scene.target))
        ):
            self._zoomed = True
            comps["zoom"] = 1.0
        if name == "ocr":
            for i, readout in enumerate(scene.readouts):
                if contains(region, scene.to_view(readout.box)):
                    if i not in self._ocr_read and tight:
                        comps["ocr"] += 1.0
                    self._ocr_read[i] = result.text

    # ---- state -----------------------------------------------------------------------------

    def state_key(self) -> str:
        if self._task_id is None:
            return ""
        payload = json.dumps(
            [self._task_id, sorted(self._calls), self._done], separators=(",", ":")
        )
        return hashlib.blake2b(payload.encode(), digest_size=16).hexdigest()

    def _native_snapshot(self) -> Any:
        return (
            frozenset(self._calls),
            self._zoomed,
            dict(self._ocr_read),
            dict(self._ground_text),
            self._used_tool,
            self._measured,
            self._ocr_spent,
        )

    def _native_restore(self, native: Any) -> None:
        assert self._task_id is not None
        self._load_scene(self._task_id)
        calls, self._zoomed, ocr_read, ground_text, self._used_tool, self._measured = native[:6]
        self._ocr_spent = native[6]
        self._calls = set(calls)
        self._ocr_read = dict(ocr_read)
        self._ground_text = dict(ground_text)

    # ---- reference policies ----------------------------------------------------------------

    def oracle_action(self) -> str:
        """A privileged tool-using move: locate, zoom, read with OCR, then answer.

        The oracle knows where the detail is (the scene graph), but for text it answers with
        what its own OCR calls returned, so its success rate measures the real tool chain.
        Tasks legible in the view are answered at once, as a good agent should.
        """
        scene = self.scene
        if not scene.needs_tools:
            return render_answer(scene.answer)
        if scene.target is not None and not self._zoomed:
            return render_tool_call("zoom", {"box": _rounded(_view_pad(scene, scene.target, 8))})
        missing = [i for i in range(len(scene.readouts)) if i not in self._ocr_read]
        if missing:
            calls = []
            for i in missing:
                r = scene.readouts[i]
                args: dict[str, Any] = {"box": _rounded(_view_pad(scene, r.box, 2))}
                if r.angle:
                    args["angle"] = round(r.angle, 2)
                if r.enhance:
                    args["enhance"] = True
                calls.append(render_tool_call("ocr", args))
            return "\n".join(calls)
        if scene.readouts:
            return render_answer(
                read_answer(scene, [self._ocr_read[i] for i in range(len(scene.readouts))])
            )
        if scene.oracle_points:
            key = "measure" + json.dumps({"points": _rounded_points(scene)}, sort_keys=True)
            if key not in self._calls:
                return render_tool_call("measure", {"points": _rounded_points(scene)})
            return render_answer(self._measured or scene.answer)
        if scene.task_type == "objects" and scene.answer_type == "int":
            query = scene.question.removeprefix("How many ").split(" are there")[0]
            if query not in self._ground_text:
                return render_tool_call("ground", {"query": query})
            return render_answer(str(_count_found(self._ground_text[query])))
        if not self._used_tool:  # look at the whole picture at full resolution first
            width, height = scene.view_size
            return render_tool_call("zoom", {"box": [0, 0, width, height]})
        return render_answer(scene.answer)


def _rounded_points(scene: Scene) -> list[list[float]]:
    return [[round(x, 2), round(y, 2)] for x, y in scene.oracle_points]


def _view_pad(scene: Scene, box: Box, pad_view_px: float) -> Box:
    width, height = scene.view_size
    return pad_box(scene.to_view(box), pad_view_px, (width, height))


def _rounded(box: Box) -> list[float]:
    return [round(v, 1) for v in box]


def _measured_value(text: str) -> str:
    """The value a measure result states: units when a scale bar exists, else degrees."""
    unit = re.search(r"= ([\d.]+) units", text)
    if unit:
        return f"{float(unit.group(1)):.2f}"
    angle = re.search(r": ([\d.]+) degrees", text)
    return f"{float(angle.group(1)):.1f}" if angle else ""


def _count_found(text: str) -> int:
    first = text.split("\n", 1)[0]
    if not first.startswith("Found "):
        return 0
    return int(first.split()[1])


def read_answer(scene: Scene, texts: Sequence[str]) -> str:
    """The answer a reader derives from the OCR text of each readout ("" when unreadable)."""
    values = []
    for readout, text in zip(scene.readouts, texts):
        body = text.split("\n", 1)[1] if "\n" in text else text
        value = readout.parse(body)
        if value is None:
            return ""
        values.append(value)
    if scene.combine == "sum":
        try:
            return str(sum(int(v) for v in values))
        except ValueError:
            return ""
    value = values[0]
    return value.replace(" ", "").lower() if scene.task_type == "signs" else value.replace(" ", "")
