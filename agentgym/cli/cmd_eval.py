"""``agentgym eval``: held-out success of any policy on an env's TEST split.

Examples::

    agentgym eval agentgym/Sokoban-Tiny-v0 --policy oracle --episodes 100
    agentgym eval agentgym/Sokoban-Tiny-v0 --policy random --episodes 100
    agentgym eval agentgym/Sokoban-Tiny-v0 --policy checkpoint --checkpoint runs/x/checkpoint.pt
    agentgym eval agentgym/Sokoban-Tiny-v0 --policy hf --model ./my-model --episodes 20
    agentgym eval agentgym/Sokoban-Tiny-v0 --policy openai --base-url http://127.0.0.1:8000/v1 \
        --model Qwen/Qwen2.5-7B-Instruct --episodes 50 --num-envs 16 --record eval.agtr

Plays ``--episodes`` episodes of ``--split`` (default ``test``: tasks disjoint from the
training split; episode k is reset with seed ``--seed`` + k), greedy and/or sampled, through
the same rollout loop as training, so a trained checkpoint sees the input it was trained on
(its history window is read from the checkpoint). Prints a summary table; ``--out`` writes
one JSON line per episode (mode, task id, seed, success, return, turns); ``--record`` writes
every step of every episode to a trajectory file (``agentgym view FILE -o eval.html``).

``--policy openai`` evaluates a model behind any OpenAI-compatible chat-completions server
(vLLM, SGLang, llama.cpp, a hosted API): ``--base-url`` and ``--model`` (the served name).
The env's tools go with each request; tool calls in the reply are played as the env's
actions. ``--num-envs`` envs play at once, so up to that many requests are in flight. The
API key is read from the environment variable ``--api-key-env`` names (default
``OPENAI_API_KEY``, sent when set; a local server usually needs none), never from the
command line. The model reads the whole conversation unless ``--history-turns`` says less.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from agentgym.cli.args import json_object, positive_int
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
    p.add_argument("--policy", default="checkpoint", choices=list(POLICY_KINDS))
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
    p.add_argument("--episodes", type=int, default=100, help="held-out episodes per mode")
    p.add_argument("--split", choices=["train", "test"], default="test")
    p.add_argument(
        "--mode",
        choices=["both", "greedy", "sampled"],
        default="both",
        help="greedy (temperature 0), sampled, or both (default)",
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
    p.add_argument("--no-progress", action="store_true")
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


def run(args: argparse.Namespace) -> int:
    from agentgym.agents.load import load_policy

    openai = args.policy == "openai"
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
    )
    name = _policy_name(args)
    try:
        results = _evaluate(args, policy, name, env_kwargs, history)
    except Exception as exc:
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
        close = getattr(policy, "close", None)
        if callable(close):
            close()
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            for res in results:
                for row in res.rows():
                    fh.write(json.dumps(row) + "\n")
    print(f"{results[0].env_id}  split={args.split}  policy={name}")
    print(f"{'mode':<8} {'episodes':>8} {'success':>8} {'+-se':>6} {'return':>8} {'turns':>6}")
    for res in results:
        turns = sum(o.turns for o in res.outcomes) / max(1, len(res.outcomes))
        print(
            f"{res.mode:<8} {len(res.outcomes):>8} {res.success:>8.3f} {res.stderr:>6.3f} "
            f"{res.return_mean:>8.3f} {turns:>6.1f}"
        )
    if args.out:
        print(f"per-episode results: {args.out}")
    if args.record:
        episodes = sum(len(res.outcomes) for res in results)
        print(
            f"recorded {episodes} episodes to {args.record} "
            f"(view: agentgym view {args.record} -o eval.html)"
        )
    return 0


def _evaluate(
    args: argparse.Namespace,
    policy: Any,
    name: str,
    env_kwargs: dict[str, Any],
    history: int | None,
) -> list[Any]:
    """One held-out evaluation per mode, each recorded to ``--record`` when given."""
    from contextlib import nullcontext

    from agentgym.registry import get_record
    from agentgym.rl.heldout import heldout_eval
    from agentgym.trajectory import Recorder

    modes = ["greedy", "sampled"] if args.mode == "both" else [args.mode]
    recorder = (
        Recorder(
            args.record,
            env_id=get_record(args.env_id).id,
            header_extra={"command": "eval", "policy": name, "split": args.split},
        )
        if args.record
        else None
    )
    results = []
    with recorder if recorder is not None else nullcontext():
        for mode in modes:
            callbacks: dict[str, Any] = {}
            if recorder is not None:
                callbacks = recorder.play_callbacks(
                    args.env_id,
                    env_kwargs={**env_kwargs, "split": args.split},
                    seed=args.seed,
                    meta={"mode": mode, "policy": name},
                )
            results.append(
                heldout_eval(
                    args.env_id,
                    policy,
                    episodes=args.episodes,
                    split=args.split,
                    greedy=mode == "greedy",
                    env_kwargs=env_kwargs,
                    history_turns=history,
                    num_envs=args.num_envs,
                    seed=args.seed,
                    progress=not args.no_progress,
                    **callbacks,
                )
            )
    return results
