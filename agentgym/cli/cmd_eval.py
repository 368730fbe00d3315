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
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from agentgym.cli.args import check_env_args, json_object, positive_int, progress_wanted
from agentgym.error import InvalidConfigError

#: The environment variable ``--policy openai`` reads its API key from by default.
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"


def add_parser(sub: argparse._SubParsersAction) -> None:
    from agentgym.agents.load import POLICY_KINDS

    p = sub.add_parser(
        "eval",
        help="held-out (test split) success of a policy or checkpoint, greedy and sampled",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("env_id", metavar="ID", help="a registered id (see `agentgym list`)")
    p.add_argument(
        "--policy",
        default="checkpoint",
        choices=list(POLICY_KINDS),
        help="what plays (default: checkpoint)",
    )
    p.add_argument("--checkpoint", default=None, help="checkpoint.pt (or its run folder)")
    p.add_argument(
        "--model",
        default=None,
        help="--policy hf: a local transformers folder; --policy openai: the served model name",
    )
    p.add_argument(
        "--base-url",
        default=None,
        metavar="URL",
        help="--policy openai: the server's OpenAI-compatible root, e.g. http://127.0.0.1:8000/v1",
    )
    p.add_argument(
        "--api-key-env",
        default=None,
        metavar="NAME",
        help=(
            "--policy openai: environment variable holding the API key (default: "
            f"{DEFAULT_API_KEY_ENV}, sent when set; a variable named here must be set)"
        ),
    )
    p.add_argument(
        "--request-timeout",
        type=float,
        default=120.0,
        metavar="S",
        help="--policy openai: seconds to wait for one reply (default 120)",
    )
    p.add_argument("--epsilon", type=float, default=0.2, help="--policy noisy-oracle: noise")
    p.add_argument(
        "--episodes", type=int, default=100, help="held-out tasks per mode (default 100)"
    )
    p.add_argument(
        "--split",
        default="test",
        help="task split (default: test); envs with more (valid, test_seen, test_unseen) "
        "list them on their docs page",
    )
    p.add_argument(
        "--mode",
        choices=["both", "greedy", "sampled"],
        default=None,
        help=(
            "greedy (temperature 0), sampled (the policy's temperature, or --temperature), or "
            "both (every episode twice). Default: sampled when --temperature > 0 or "
            "--samples-per-task > 1 is given, else greedy"
        ),
    )
    p.add_argument(
        "--temperature",
        type=float,
        default=None,
        metavar="T",
        help="the sampled mode's temperature (default: the policy's own; openai: 1.0)",
    )
    p.add_argument(
        "--top-p",
        type=float,
        default=None,
        metavar="P",
        help="--policy openai: nucleus sampling mass, sent as top_p (default: the server's)",
    )
    p.add_argument(
        "--extra-body",
        default=None,
        metavar="JSON",
        help=(
            "--policy openai: a JSON object merged into every request, e.g. "
            '\'{"chat_template_kwargs": {"enable_thinking": false}}\''
        ),
    )
    p.add_argument(
        "--samples-per-task",
        type=positive_int,
        default=1,
        metavar="K",
        help="play each task K times and report pass@k and pass^k (default 1)",
    )
    p.add_argument(
        "--tool-messages",
        choices=["auto", "native", "text"],
        default=None,
        help=(
            "--policy openai: past tool calls as native tool_calls + role:tool messages, as "
            "text, or auto (default: native until the server refuses them, then text)"
        ),
    )
    p.add_argument(
        "--retries",
        type=int,
        default=4,
        help=(
            "--policy openai: retries of a request answered 429/5xx or cut off, with "
            "exponential backoff 1, 2, 4... s (default 4)"
        ),
    )
    p.add_argument(
        "--history-turns",
        type=int,
        default=None,
        help=(
            "turn pairs of history in the input (-1: all; default: the checkpoint's, "
            "all for --policy openai, else 1)"
        ),
    )
    p.add_argument("--env-kwargs", default=None, help="JSON dict passed to gym.make")
    p.add_argument("--seed", type=int, default=0, help="episode k is reset with seed+k")
    p.add_argument(
        "--num-envs",
        type=positive_int,
        default=16,
        help="envs stepped concurrently (--policy openai: also the requests in flight)",
    )
    p.add_argument("--device", default="cpu", help="cpu or cuda (learned policies)")
    p.add_argument(
        "--max-new-tokens",
        type=int,
        default=256,
        help="--policy hf/openai: generation budget per turn (openai: max_tokens)",
    )
    p.add_argument("--out", default=None, help="per-episode results, JSON lines")
    p.add_argument(
        "--record", metavar="FILE", default=None, help="write every episode to this .agtr file"
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


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


def _policy_name(args: argparse.Namespace) -> str:
    if args.policy == "checkpoint":
        return str(args.checkpoint)
    if args.policy == "hf":
        return str(args.model)
    if args.policy == "openai":
        return f"{args.model} @ {args.base_url}"
    return str(args.policy)


def _resolve_modes(args: argparse.Namespace) -> list[str]:
    """The modes to play: ``--mode``, else sampled when sampling was asked for, else greedy."""
    if args.temperature is not None and args.temperature < 0:
        raise InvalidConfigError(f"--temperature must be >= 0, got {args.temperature}.")
    if args.top_p is not None and not 0 < args.top_p <= 1:
        raise InvalidConfigError(f"--top-p must be in (0, 1], got {args.top_p}.")
    mode = args.mode
    if mode is None:
        sampling = bool(args.temperature) or args.samples_per_task > 1
        mode = "sampled" if sampling else "greedy"
    if mode == "greedy" and args.temperature:
        raise InvalidConfigError(
            f"--temperature {args.temperature} is the sampled mode's temperature, but "
            "--mode greedy always uses 0. Pass --mode sampled (or both), or drop --temperature."
        )
    return ["greedy", "sampled"] if mode == "both" else [mode]


def _http_options(args: argparse.Namespace) -> dict[str, Any]:
    """HTTPPolicy settings from the openai-only flags; a typed error if used elsewhere."""
    given = [
        flag
        for flag, value in (
            ("--top-p", args.top_p),
            ("--extra-body", args.extra_body),
            ("--tool-messages", args.tool_messages),
        )
        if value is not None
    ]
    if args.policy != "openai":
        if given:
            raise InvalidConfigError(
                f"{', '.join(given)} only apply to --policy openai (a model server); "
                f"--policy {args.policy} takes none of them."
            )
        return {}
    return {
        "top_p": args.top_p,
        "extra_body": json_object(args.extra_body, "--extra-body") if args.extra_body else None,
        "tool_messages": args.tool_messages or "auto",
        "retries": args.retries,
    }


def run(args: argparse.Namespace) -> int:
    from agentgym.agents.load import load_policy

    openai = args.policy == "openai"
    modes = _resolve_modes(args)
    http_options = _http_options(args)
    api_key = api_key_from_env(args.api_key_env) if openai else None
    trained = _checkpoint_settings(args.checkpoint) if args.policy == "checkpoint" else {}
    if args.history_turns is not None:
        history = None if args.history_turns < 0 else args.history_turns
    else:
        history = None if openai else trained.get("history_turns", 1)
    env_kwargs = (
        json_object(args.env_kwargs)
        if args.env_kwargs is not None
        else {k: v for k, v in (trained.get("env_kwargs") or {}).items() if k != "split"}
    )
    check_env_args(args.env_id, {**env_kwargs, "split": args.split}, "eval")
    policy = load_policy(
        args.policy,
        checkpoint=args.checkpoint,
        model=args.model,
        epsilon=args.epsilon,
        seed=args.seed,
        device=args.device,
        max_new_tokens=args.max_new_tokens,
        base_url=args.base_url,
        api_key=api_key,
        max_concurrency=args.num_envs,
        request_timeout=args.request_timeout,
        http_options=http_options,
    )
    name = _policy_name(args)
    rows = EpisodeRows(args.out)
    interrupted = False
    try:
        _evaluate(args, policy, name, env_kwargs, history, modes, rows)
    except KeyboardInterrupt:
        interrupted = True
    except Exception as exc:
        if rows.rows:  # what finished still counts; the error line follows the summary
            _print_summary(args, name, modes, rows)
        status = getattr(exc, "status", None)
        if openai and status in (401, 403):
            var = args.api_key_env or DEFAULT_API_KEY_ENV
            sent = "a key from" if api_key else "no key: nothing in"
            raise InvalidConfigError(
                f"{args.base_url} refused the request (HTTP {status}); agentgym sent {sent} "
                f"${var}. Export the server's key in {var}, or name another variable with "
                "--api-key-env."
            ) from exc
        raise
    finally:
        rows.close()
        close = getattr(policy, "close", None)
        if callable(close):
            close()
    _print_summary(args, name, modes, rows)
    planned = args.episodes * args.samples_per_task * len(modes)
    if interrupted:
        print(
            f"interrupted: {len(rows.rows)} of {planned} episodes finished; the summary"
            f"{' and ' + args.out if args.out else ''} cover those.",
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


def _print_summary(
    args: argparse.Namespace, name: str, modes: list[str], rows: EpisodeRows
) -> None:
    """The table of finished episodes per mode, and pass@k / pass^k with several samples."""
    from agentgym.evaluation import pass_k_summary, report_ks
    from agentgym.registry import get_record

    print(f"{get_record(args.env_id).id}  split={args.split}  policy={name}")
    print(f"{'mode':<8} {'episodes':>8} {'success':>8} {'+-se':>6} {'return':>8} {'turns':>6}")
    samples = args.samples_per_task
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
    if args.out:
        print(f"per-episode results: {args.out}")
    if args.record:
        print(
            f"recorded {len(rows.rows)} episodes to {args.record} "
            f"(view: agentgym view {args.record} -o eval.html)"
        )


def _evaluate(
    args: argparse.Namespace,
    policy: Any,
    name: str,
    env_kwargs: dict[str, Any],
    history: int | None,
    modes: list[str],
    rows: EpisodeRows,
) -> None:
    """Play each mode's episodes, adding each to ``rows`` (and ``--record``) as it ends."""
    from contextlib import nullcontext

    from tqdm.auto import tqdm

    from agentgym.registry import get_record
    from agentgym.rl.heldout import temperature
    from agentgym.rollout import EpisodeCallbacks
    from agentgym.rollout.heldout import engine_heldout
    from agentgym.trajectory import Recorder

    samples = args.samples_per_task
    recorder = (
        Recorder(
            args.record,
            env_id=get_record(args.env_id).id,
            header_extra={"command": "eval", "policy": name, "split": args.split},
        )
        if args.record
        else None
    )
    with recorder if recorder is not None else nullcontext():
        for mode in modes:
            callbacks: dict[str, Any] = {}
            if recorder is not None:
                callbacks = recorder.play_callbacks(
                    args.env_id,
                    env_kwargs={**env_kwargs, "split": args.split},
                    # with several samples per task, each episode's seed comes from its end
                    seed=args.seed if samples == 1 else None,
                    meta={"mode": mode, "policy": name},
                )
            bar = tqdm(
                total=args.episodes * samples,
                desc=f"eval {args.split} {mode}",
                unit="ep",
                disable=not progress_wanted(args.no_progress),
                leave=False,
            )

            def on_episode(ep: Any, mode: str = mode, bar: Any = bar) -> None:
                if ep.status != "done":
                    rows.failures.append(f"{mode} seed {ep.seed}: {ep.cause}")
                    return
                bar.update(1)
                rows.add(
                    {
                        "mode": mode,
                        "split": args.split,
                        "task_id": ep.task_id,
                        "seed": ep.seed,
                        "sample": ep.index % samples,
                        "success": bool(ep.success),
                        "total_reward": float(ep.total_reward),
                        "turns": len(ep.steps),
                    }
                )

            sampled_temperature = args.temperature if mode == "sampled" else None
            try:
                with temperature(policy, sampled_temperature):
                    engine_heldout(
                        args.env_id,
                        policy,
                        episodes=args.episodes,
                        split=args.split,
                        greedy=mode == "greedy",
                        env_kwargs=env_kwargs,
                        history_turns=history,
                        num_envs=args.num_envs,
                        seed=args.seed,
                        samples_per_task=samples,
                        callbacks=EpisodeCallbacks(**callbacks, on_episode=on_episode),
                    )
            finally:
                bar.close()
