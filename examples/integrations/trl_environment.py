"""TRL: an environment_factory class for GRPOTrainer, built from an env id.

Shows the class TRL receives (tool schema as TRL renders it) and plays it by hand.
With a model: GRPOTrainer(model=..., train_dataset=seed_dataset(ENV, range(256)),
environment_factory=environment_class(ENV), args=GRPOConfig(...)).
Run: python examples/integrations/trl_environment.py
"""

import contextlib
import json

from agentgym.integrations.trl import environment_class, seed_dataset

ENV = "agentgym/Sokoban-Tiny-v0"
Sokoban = environment_class(ENV)
env = Sokoban()
try:
    from transformers.utils import get_json_schema

    print(json.dumps(get_json_schema(Sokoban.move), indent=1))
except ImportError:
    print(Sokoban.move.__doc__)
print(env.reset(prompt=[], seed=0))
for d in ("up", "left", "down", "right"):
    try:
        print(f"move({d}) ->", env.move(direction=d).splitlines()[0])
    except ValueError as err:  # TRL passes this message to the model as the tool's result
        print(f"move({d}) -> error: {err}")
print("reward:", env.get_reward())
with contextlib.suppress(ImportError):
    print(seed_dataset(ENV, range(4)))
