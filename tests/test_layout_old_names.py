"""The names of the layout before issue 33 still import, and give the very same objects.

``agentgym.rl`` became ``agentgym.algos`` (its rollout loops ``agentgym.rollout.groups``),
``agentgym.vector`` and ``agentgym.distributed`` became ``agentgym.pools.local`` and
``agentgym.pools.ray``. Code written against the old names must keep working, and must not
get second copies of the modules: a second ``Trainer`` class or a second ``EnvPool`` would
fail ``isinstance`` checks and split module-level state in two.
"""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import agentgym.algos
import agentgym.algos.trainer
import agentgym.pools
import agentgym.pools.local
import agentgym.pools.ray
import agentgym.rollout.groups

OLD_RL = {
    "advantages": "agentgym.algos.advantages",
    "curves": "agentgym.algos.curves",
    "demos": "agentgym.algos.demos",
    "gigpo": "agentgym.algos.gigpo",
    "grpo": "agentgym.algos.grpo",
    "heldout": "agentgym.algos.heldout",
    "losses": "agentgym.algos.losses",
    "rollouts": "agentgym.rollout.groups",
    "rundir": "agentgym.algos.rundir",
    "sft": "agentgym.algos.sft",
    "trainer": "agentgym.algos.trainer",
    "tree_grpo": "agentgym.algos.tree_grpo",
}


def test_the_old_rl_package_is_the_algos_package():
    import agentgym.rl

    assert agentgym.rl is agentgym.algos
    from agentgym.rl import TrainConfig, Trainer, gigpo_advantages, ppo_clip_loss, train

    assert Trainer is agentgym.algos.trainer.Trainer
    assert TrainConfig is agentgym.algos.trainer.TrainConfig
    assert train is agentgym.algos.trainer.train
    assert gigpo_advantages is agentgym.algos.advantages.gigpo_advantages
    assert ppo_clip_loss is agentgym.algos.losses.ppo_clip_loss


@pytest.mark.parametrize("old", sorted(OLD_RL))
def test_each_old_rl_submodule_is_the_module_it_moved_to(old):
    module = importlib.import_module(f"agentgym.rl.{old}")
    assert module is importlib.import_module(OLD_RL[old])
    assert sys.modules[f"agentgym.rl.{old}"] is module
    # the module keeps its own name and spec: reload and pickling go by them
    assert module.__spec__.name == module.__name__ == OLD_RL[old]


def test_old_from_imports_give_the_same_objects():
    from agentgym.rl.rollouts import group_rollouts, tree_rollouts
    from agentgym.rl.trainer import Trainer

    assert Trainer is agentgym.algos.trainer.Trainer
    assert group_rollouts is agentgym.rollout.groups.group_rollouts
    assert tree_rollouts is agentgym.rollout.groups.tree_rollouts


def test_an_unknown_old_rl_submodule_is_still_an_import_error():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("agentgym.rl.no_such_module")


def test_the_old_pool_modules_are_the_pools_modules():
    import agentgym.distributed
    import agentgym.vector
    from agentgym.distributed import RayEnvPool
    from agentgym.vector import EnvPool, StepResult, _safe_step  # private names too

    assert agentgym.vector is agentgym.pools.local
    assert agentgym.distributed is agentgym.pools.ray
    assert EnvPool is agentgym.pools.EnvPool is agentgym.pools.local.EnvPool
    assert StepResult is agentgym.pools.StepResult
    assert _safe_step is agentgym.pools.local._safe_step
    assert RayEnvPool is agentgym.pools.RayEnvPool is agentgym.pools.ray.RayEnvPool


def test_old_names_stay_light_in_a_fresh_process():
    """``from agentgym.rl import gigpo_advantages`` needed only numpy, and the Ray pool's
    module imported Ray only when a pool started: the old names keep both promises."""
    code = (
        "import sys\n"
        "from agentgym.rl import gigpo_advantages\n"
        "import agentgym.distributed, agentgym.pools\n"
        "assert agentgym.pools.RayEnvPool is agentgym.distributed.RayEnvPool\n"
        "print(sorted(m for m in ('torch', 'ray') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
