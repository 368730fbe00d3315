"""``agentgym eval``: held-out success of any policy on an env's TEST split.

Examples::

    agentgym eval agentgym/Sokoban-Tiny-v0 --policy oracle --episodes 100
    agentgym eval agentgym/Sokoban-Tiny-v0 --policy random --episodes 100
    agentgym eval agentgym/Sokoban-Tiny-v0 --policy checkpoint --checkpoint runs/x/checkpoint.pt
    agentgym eval agentgym/Sokoban-Tiny-v0 --policy hf --model ./my-model --episodes 20
    agentgym eval agentgym/Sokoban-Tiny-v0 --policy openai --base-url http://127.0.0.1:8000/v1 \
        --model Qwen/Qwen2.5-7B-Instruct --episodes 50 --num-envs 16 --record eval.agtr

Plays ``--episodes`` tasks of ``--split`` (default ``test``: tasks disjoint from the
training split; task k is reset with seed ``--seed`` + k), through the asynchronous rollout
engine (:mod:`agentgym.rollout`: ``--num-envs`` episodes in flight, each stepped as soon as
its own action arrives), with the same chat input as training, so a trained checkpoint sees
the input it was trained on (its history window is read from the checkpoint). An episode
ended by an infrastructure failure (env crash or timeout, a policy request that failed
after its retries) is counted in the summary, never scored, and played again from reset;
one that fails on the policy server twice stops the run, keeping every finished episode. One mode by default: greedy (temperature 0), or sampled when
``--temperature`` > 0 or ``--samples-per-task`` > 1 asks for sampling; ``--mode both``
plays every task both ways. ``--samples-per-task K`` plays each task K times and adds
pass@k (some of k samples succeed) and pass^k (all k succeed) to the summary.

Prints a summary table; ``--out`` gets one JSON line per episode (mode, task id, seed,
sample, success, return, turns) the moment it ends; ``--record`` writes every step of every
episode to a trajectory file (``agentgym view FILE -o eval.html``). Ctrl-C stops the run at
once and still writes ``--out`` and the summary of the episodes that finished (exit 130).

``--policy openai`` evaluates a model behind any OpenAI-compatible chat-completions server
(vLLM, SGLang, llama.cpp, a hosted API): ``--base-url`` and ``--model`` (the served name).
The env's tools go with each request; tool calls in the reply are played as the env's
actions. ``--num-envs`` envs play at once, so up to that many requests are in flight. The
API key is read from the environment variable ``--api-key-env`` names (default
``OPENAI_API_KEY``, sent when set; a local server usually needs none), never from the
command line. The model reads the whole conversation unless ``--history-turns`` says less.
``--temperature``, ``--top-p`` and ``--extra-body JSON`` (merged into every request, e.g. a
chat template's ``enable_thinking``) shape the requests; past tool calls go back as native
``tool_calls`` and ``role: tool`` messages unless the server refuses them
(``--tool-messages``); a request answered 429 or 5xx, or cut off, is retried with backoff.

``--env-kwargs JSON`` is passed to ``gym.make``, so a model is evaluated on your own data
files in one command (``'{"questions": "hotpot_dev.json"}'`` for SearchQA,
``'{"tasks": "HumanEval.jsonl.gz"}'`` for CodeTests; see docs/own-data.md). The digests of
the files are added to the env settings (``questions_sha256``...), so every env of the run
and the ``--record`` file name the exact files, and a replay refuses a different one.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from agentgym.cli.args import check_env_args, pin_data_files, progress_wanted
from agentgym.cli.from_config import ConfigFlags, Flag, add_deferred
from agentgym.error import InvalidConfigError

if TYPE_CHECKING:
    from agentgym.evaluation import EvalConfig

#: The environment variable ``--policy openai`` reads its API key from by default.
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"


#: Where a flag differs from the generated one: value names in ``--help``.
FLAGS = {
    "env_id": Flag(metavar="ID"),
    "checkpoint": Flag(metavar="PATH"),
    "base_url": Flag(metavar="URL"),
    "api_key_env": Flag(metavar="NAME"),
    "request_timeout": Flag(metavar="S"),
    "temperature": Flag(metavar="T"),
    "top_p": Flag(metavar="P"),
    "samples_per_task": Flag(metavar="K"),
    "out": Flag(metavar="FILE"),
    "record": Flag(metavar="FILE"),
}


def config_flags() -> ConfigFlags[EvalConfig]:
    """The flags of :class:`~agentgym.evaluation.EvalConfig` (the one source of defaults)."""
    from agentgym.evaluation import EvalConfig

    return ConfigFlags(EvalConfig, FLAGS)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval",
        help="held-out (test split) success of a policy or checkpoint, greedy and sampled",
        description=__doc__,
        usage="%(prog)s ID [--policy POLICY] [OPTIONS]",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_deferred(p, config_flags, "train")
    p.set_defaults(func=run)


def eval_config(args: argparse.Namespace) -> EvalConfig:
    """The :class:`EvalConfig` the parsed flags describe (``agentgym eval ID``:
    ``EvalConfig(ID)``)."""
    return config_flags().config(args)


def _checkpoint_settings(path: str | None) -> dict:
    """The training config stored in a checkpoint (empty for older ones or none)."""
    if not path:
        return {}
    from agentgym.agents.load import read_checkpoint

    return dict(read_checkpoint(path).get("train_config") or {})


def api_key_from_env(name: str | None) -> str | None:
    """The API key in environment variable ``name``, read so that no key is ever an argument.

    ``None`` means the default, :data:`DEFAULT_API_KEY_ENV`, which may be unset (local
    servers need no key). A variable the user named must be set and non-empty, else a
    typed error says how to set it.
    """
    if name is None:
        return os.environ.get(DEFAULT_API_KEY_ENV) or None
    value = os.environ.get(name)
    if not value:
        raise InvalidConfigError(
            f"--api-key-env {name}: the environment variable {name} is "
            f"{'empty' if value == '' else 'not set'}. Set it (export {name}=...) or leave "
            f"--api-key-env out for a server that needs no key."
        )
    return value


def _policy_name(cfg: EvalConfig) -> str:
    if cfg.policy == "checkpoint":
        return str(cfg.checkpoint)
    if cfg.policy == "hf":
        return str(cfg.model)
    if cfg.policy == "openai":
        return f"{cfg.model} @ {cfg.base_url}"
    return str(cfg.policy)


def _resolve_modes(cfg: EvalConfig) -> list[str]:
    """The modes to play: ``--mode``, else sampled when sampling was asked for, else greedy."""
    if cfg.temperature is not None and cfg.temperature < 0:
        raise InvalidConfigError(f"--temperature must be >= 0, got {cfg.temperature}.")
    if cfg.top_p is not None and not 0 < cfg.top_p <= 1:
        raise InvalidConfigError(f"--top-p must be in (0, 1], got {cfg.top_p}.")
    mode = cfg.mode
    if mode is None:
        sampling = bool(cfg.temperature) or cfg.samples_per_task > 1
        mode = "sampled" if sampling else "greedy"
    if mode == "greedy" and cfg.temperature:
        raise InvalidConfigError(
            f"--temperature {cfg.temperature} is the sampled mode's temperature, but "
            "--mode greedy always uses 0. Pass --mode sampled (or both), or drop --temperature."
        )
    return ["greedy", "sampled"] if mode == "both" else [mode]


def _http_options(cfg: EvalConfig) -> dict[str, Any]:
    """HTTPPolicy settings from the openai-only flags; a typed error if used elsewhere."""
    given = [
        flag
        for flag, value in (
            ("--top-p", cfg.top_p),
            ("--extra-body", cfg.extra_body),
            ("--tool-messages", cfg.tool_messages),
        )
        if value is not None
    ]
    if cfg.policy != "openai":
        if given:
            raise InvalidConfigError(
                f"{', '.join(given)} only apply to --policy openai (a model server); "
                f"--policy {cfg.policy} takes none of them."
            )
        return {}
    return {
        "top_p": cfg.top_p,
        "extra_body": cfg.extra_body,
        "tool_messages": cfg.tool_messages or "auto",
        "retries": cfg.retries,
    }


def _history_and_env_kwargs(cfg: EvalConfig) -> tuple[int | None, dict[str, Any]]:
    """The history window and env settings: the flags', else the checkpoint's, else the
    defaults (the whole conversation for a served model, one turn pair otherwise)."""
    trained = _checkpoint_settings(cfg.checkpoint) if cfg.policy == "checkpoint" else {}
    if cfg.history_turns is not None:
        history = None if cfg.history_turns < 0 else cfg.history_turns
    else:
        history = None if cfg.policy == "openai" else trained.get("history_turns", 1)
    env_kwargs = (
        dict(cfg.env_kwargs)
        if cfg.env_kwargs is not None
        else {k: v for k, v in (trained.get("env_kwargs") or {}).items() if k != "split"}
    )
    return history, env_kwargs


def run(args: argparse.Namespace) -> int:
    from agentgym.agents.load import load_policy

    cfg = eval_config(args)
    openai = cfg.policy == "openai"
    modes = _resolve_modes(cfg)
    http_options = _http_options(cfg)
    api_key = api_key_from_env(cfg.api_key_env) if openai else None
    history, env_kwargs = _history_and_env_kwargs(cfg)
    check_env_args(cfg.env_id, {**env_kwargs, "split": cfg.split}, "eval")
    env_kwargs = pin_data_files(cfg.env_id, env_kwargs, cfg.split)
    policy = load_policy(
        cfg.policy,
        checkpoint=cfg.checkpoint,
        model=cfg.model,
        epsilon=cfg.epsilon,
        seed=cfg.seed,
        device=cfg.device,
        max_new_tokens=cfg.max_new_tokens,
        base_url=cfg.base_url,
        api_key=api_key,
        max_concurrency=cfg.num_envs,
        request_timeout=cfg.request_timeout,
        http_options=http_options,
    )
    name = _policy_name(cfg)
    rows = EpisodeRows(cfg.out)
    interrupted = False
    try:
        _evaluate(cfg, policy, name, env_kwargs, history, modes, rows)
    except KeyboardInterrupt:
        interrupted = True
    except Exception as exc:
        if rows.rows:  # what finished still counts; the error line follows the summary
            _print_summary(cfg, name, modes, rows)
        status = getattr(exc, "status", None)
        if openai and status in (401, 403):
            var = cfg.api_key_env or DEFAULT_API_KEY_ENV
            sent = "a key from" if api_key else "no key: nothing in"
            raise InvalidConfigError(
                f"{cfg.base_url} refused the request (HTTP {status}); agentgym sent {sent} "
                f"${var}. Export the server's key in {var}, or name another variable with "
                "--api-key-env."
            ) from exc
        raise
    finally:
        rows.close()
        close = getattr(policy, "close", None)
        if callable(close):
            close()
    _print_summary(cfg, name, modes, rows)
    planned = cfg.episodes * cfg.samples_per_task * len(modes)
    if interrupted:
        print(
            f"interrupted: {len(rows.rows)} of {planned} episodes finished; the summary"
            f"{' and ' + cfg.out if cfg.out else ''} cover those.",
            file=sys.stderr,
        )
        return 130
    return 0


class EpisodeRows:
    """Finished episodes: kept in memory and appended to ``--out`` the moment each ends.

    A run stopped by Ctrl-C, a server that gave up or a crash keeps every episode that
    finished. :meth:`close` rewrites the file in a stable order (mode, seed, sample).
    """

    def __init__(self, path: str | None):
        self.path = path
        self.rows: list[dict[str, Any]] = []
        self.failures: list[str] = []
        """Attempts ended by an infrastructure failure (``mode seed N: cause``): counted in
        the summary, never scored."""
        self._file = open(path, "w", encoding="utf-8") if path else None  # noqa: SIM115

    def add(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        if self._file is not None:
            self._file.write(json.dumps(row) + "\n")
            self._file.flush()

    def close(self) -> None:
        if self._file is None:
            return
        self._file.close()
        self._file = None
        assert self.path is not None
        order = {"greedy": 0, "sampled": 1}
        self.rows.sort(key=lambda r: (order.get(r["mode"], 2), r["seed"], r["sample"]))
        tmp = f"{self.path}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(row) + "\n" for row in self.rows)
        os.replace(tmp, self.path)


def _number(value: float) -> str:
    """A rate for the summary; ``-`` when nothing was measured (no whole task yet)."""
    return "-" if value != value else f"{value:.3f}"


def _print_summary(cfg: EvalConfig, name: str, modes: list[str], rows: EpisodeRows) -> None:
    """The table of finished episodes per mode, and pass@k / pass^k with several samples."""
    from agentgym.evaluation import pass_k_summary, report_ks
    from agentgym.registry import get_record

    print(f"{get_record(cfg.env_id).id}  split={cfg.split}  policy={name}")
    print(f"{'mode':<8} {'episodes':>8} {'success':>8} {'+-se':>6} {'return':>8} {'turns':>6}")
    samples = cfg.samples_per_task
    for mode in modes:
        done = [r for r in rows.rows if r["mode"] == mode]
        n = len(done)
        success = sum(r["success"] for r in done) / n if n else 0.0
        stderr = (success * (1 - success) / n) ** 0.5 if n else 0.0
        ret = sum(r["total_reward"] for r in done) / n if n else 0.0
        turns = sum(r["turns"] for r in done) / max(1, n)
        if n:
            print(f"{mode:<8} {n:>8} {success:>8.3f} {stderr:>6.3f} {ret:>8.3f} {turns:>6.1f}")
        else:  # stopped before any episode of this mode ended
            print(f"{mode:<8} {n:>8} {'-':>8} {'-':>6} {'-':>8} {'-':>6}")
        if samples > 1:
            by_task: dict[int, list[bool]] = {}
            for r in done:
                by_task.setdefault(r["seed"], []).append(bool(r["success"]))
            whole = {seed: s for seed, s in by_task.items() if len(s) == samples}
            ks = report_ks(samples)
            table = pass_k_summary(whole, ks)
            print(
                f"{mode}: pass@k and pass^k over the {len(whole)} tasks with all {samples} samples"
            )
            print(f"{'k':>4} {'pass@k':>8} {'pass^k':>8}")
            for k in ks:
                at, hat = table[f"pass@{k}"][0], table[f"pass^{k}"][0]
                print(f"{k:>4} {_number(at):>8} {_number(hat):>8}")
    if rows.failures:
        kinds: dict[str, int] = {}
        for line in rows.failures:
            kind = line.split(": ", 1)[1].split(":", 1)[0]
            kinds[kind] = kinds.get(kind, 0) + 1
        causes = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
        print(
            f"infra failures: {len(rows.failures)} attempts ({causes}); a failed attempt is "
            f"played again from reset, and none is scored (e.g. {rows.failures[0]})"
        )
    if cfg.out:
        print(f"per-episode results: {cfg.out}")
    if cfg.record:
        print(
            f"recorded {len(rows.rows)} episodes to {cfg.record} "
            f"(view: agentgym view {cfg.record} -o eval.html)"
        )


def _evaluate(
    cfg: EvalConfig,
    policy: Any,
    name: str,
    env_kwargs: dict[str, Any],
    history: int | None,
    modes: list[str],
    rows: EpisodeRows,
) -> None:
    """Play each mode's episodes, adding each to ``rows`` (and ``--record``) as it ends."""
    from contextlib import nullcontext

    from agentgym.registry import get_record
    from agentgym.trajectory import Recorder

    recorder = (
        Recorder(
            cfg.record,
            env_id=get_record(cfg.env_id).id,
            header_extra={"command": "eval", "policy": name, "split": cfg.split},
        )
        if cfg.record
        else None
    )
    with recorder if recorder is not None else nullcontext():
        for mode in modes:
            callbacks: dict[str, Any] = {}
            if recorder is not None:
                callbacks = recorder.play_callbacks(
                    cfg.env_id,
                    env_kwargs={**env_kwargs, "split": cfg.split},
                    # with several samples per task, each episode's seed comes from its end
                    seed=cfg.seed if cfg.samples_per_task == 1 else None,
                    meta={"mode": mode, "policy": name},
                )
            _play_mode(cfg, policy, mode, env_kwargs, history, rows, callbacks)


def _play_mode(
    cfg: EvalConfig,
    policy: Any,
    mode: str,
    env_kwargs: dict[str, Any],
    history: int | None,
    rows: EpisodeRows,
    callbacks: dict[str, Any],
) -> None:
    """One mode's episodes through the rollout engine, each added to ``rows`` as it ends
    (an infrastructure failure to ``rows.failures``), with a progress bar."""
    from tqdm.auto import tqdm

    from agentgym.rollout.heldout import heldout_eval, temperature

    samples = cfg.samples_per_task
    bar = tqdm(
        total=cfg.episodes * samples,
        desc=f"eval {cfg.split} {mode}",
        unit="ep",
        disable=not progress_wanted(not cfg.progress),
        leave=False,
    )

    def on_episode(ep: Any) -> None:
        if ep.status != "done":
            rows.failures.append(f"{mode} seed {ep.seed}: {ep.cause}")
            return
        bar.update(1)
        rows.add(
            {
                "mode": mode,
                "split": cfg.split,
                "task_id": ep.task_id,
                "seed": ep.seed,
                "sample": ep.index % samples,
                "success": bool(ep.success),
                "total_reward": float(ep.total_reward),
                "turns": len(ep.steps),
            }
        )

    try:
        with temperature(policy, cfg.temperature if mode == "sampled" else None):
            heldout_eval(
                cfg.env_id,
                policy,
                episodes=cfg.episodes,
                split=cfg.split,
                greedy=mode == "greedy",
                env_kwargs=env_kwargs,
                history_turns=history,
                num_envs=cfg.num_envs,
                seed=cfg.seed,
                samples_per_task=samples,
                on_episode=on_episode,
                asynchronous=True,
                **callbacks,
            )
    finally:
        bar.close()
