"""SkyRL: the `agentgym` SkyRL-gym env, its dataset, and a training entrypoint.

    python examples/integrations/skyrl_env.py --write-data data/skyrl_sokoban \
        --env agentgym/Sokoban-Small-v0          # train.parquet + validation.parquet
    python examples/integrations/skyrl_env.py    # show the prompt SkyRL's generator builds
    python examples/integrations/skyrl_env.py train <SkyRL overrides...>   # GPU, skyrl

A SkyRL row is ``{"prompt": [...], "env_class": "agentgym", "env_id": ..., "seed": ...}``;
SkyRL passes every other column as ``env_extras``. ``train`` registers the env inside
SkyRL's Ray entrypoint task (as SkyRL's own examples do) and runs its PPO experiment.
See docs/integrations/skyrl.md for the full command.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

from agentgym.integrations.skyrl import AgentGymTextEnv, register


def rows(env_id: str, seeds: range, max_turns: int) -> list[dict]:
    return [
        {
            "prompt": [{"role": "user", "content": f"{env_id} seed {s}"}],  # replaced at init
            "env_class": "agentgym",
            "env_id": env_id,
            "seed": s,
            "max_turns": max_turns,
        }
        for s in seeds
    ]


def write_data(out: pathlib.Path, env_id: str, n: int, max_turns: int) -> None:
    import pandas as pd

    out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows(env_id, range(n), max_turns)).to_parquet(out / "train.parquet")
    val = range(10**6, 10**6 + 64)
    pd.DataFrame(rows(env_id, val, max_turns)).to_parquet(out / "validation.parquet")


def show_prompt(env_id: str) -> None:
    """What SkyRL's generator tokenises: init()'s messages through the chat template."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # offline.py is beside us
    from offline import char_tokenizer  # the stand-in tokenizer (a test harness)

    from agentgym.parsing import render_tool_call

    extras = {"env_id": env_id, "seed": 2, "max_turns": 6}
    try:
        import skyrl_gym

        register()
        env = skyrl_gym.make("agentgym", env_config={}, extras=extras)
    except ImportError:
        env = AgentGymTextEnv({}, extras)
    chat, _ = env.init([{"role": "user", "content": "(replaced by the env's task)"}])
    tok = char_tokenizer()
    print(tok.decode(tok.apply_chat_template(chat, add_generation_prompt=True, tokenize=True)))
    out = env.step(render_tool_call("move", {"direction": "up"}))
    print("reward", round(out["reward"], 2), "done", out["done"], env.get_metrics())
    env.close()


def train(overrides: list[str]) -> None:
    """SkyRL's PPO experiment with the env registered in its entrypoint task."""
    import ray
    from skyrl.train.config import SkyRLTrainConfig
    from skyrl.train.entrypoints.main_base import BasePPOExp, validate_cfg
    from skyrl.train.utils import initialize_ray

    @ray.remote(num_cpus=1)
    def entrypoint(cfg: SkyRLTrainConfig) -> None:
        register()
        BasePPOExp(cfg).run()

    cfg = SkyRLTrainConfig.from_cli_overrides(overrides)
    validate_cfg(cfg)
    initialize_ray(cfg)
    ray.get(entrypoint.remote(cfg))


if __name__ == "__main__":
    if sys.argv[1:2] == ["train"]:
        train(sys.argv[2:])
        sys.exit()
    p = argparse.ArgumentParser(description="agentgym for SkyRL")
    p.add_argument("--env", default="agentgym/Sokoban-Tiny-v0")
    p.add_argument("--write-data", metavar="DIR")
    p.add_argument("--n", type=int, default=1024)
    p.add_argument("--max-turns", type=int, default=15)
    args = p.parse_args()
    if args.write_data:
        write_data(pathlib.Path(args.write_data), args.env, args.n, args.max_turns)
        print(f"wrote {args.write_data}/train.parquet and validation.parquet")
    else:
        show_prompt(args.env)
