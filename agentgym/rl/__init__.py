"""The old name of :mod:`agentgym.algos`, kept for existing code.

The algorithms moved to :mod:`agentgym.algos` and the group and tree rollout loops to
:mod:`agentgym.rollout.groups` (issue 33: loops live with the rollout core). Code written
against the old names keeps working, and gets the very same objects, not copies:

* ``import agentgym.rl`` gives the module :mod:`agentgym.algos` itself, so
  ``from agentgym.rl import gigpo_advantages, TrainConfig, train`` works as before;
* ``agentgym.rl.<name>`` for each old submodule (``advantages``, ``trainer``, ...) gives
  ``agentgym.algos.<name>``, and ``agentgym.rl.rollouts`` gives ``agentgym.rollout.groups``
  (so ``agentgym.rl.trainer.Trainer is agentgym.algos.trainer.Trainer``).

A submodule is imported only when asked for, as before: ``from agentgym.rl import
gigpo_advantages`` still needs only numpy. New code imports the new names.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType

from agentgym import algos as _algos

#: Old submodule name -> the module it now is.
MOVED: dict[str, str] = {
    **{
        f"{__name__}.{name}": f"agentgym.algos.{name}"
        for name in (
            "advantages",
            "curves",
            "demos",
            "gigpo",
            "grpo",
            "heldout",
            "losses",
            "rundir",
            "sft",
            "trainer",
            "tree_grpo",
        )
    },
    f"{__name__}.rollouts": "agentgym.rollout.groups",
}


class _OldNames(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers ``import agentgym.rl.X`` with the module that ``X`` moved to (one object)."""

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def __init__(self) -> None:
        self._own_specs: dict[str, importlib.machinery.ModuleSpec | None] = {}

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(MOVED[spec.name])
        # The import system stamps the alias's spec on the module it gets back; keep the
        # module's own, put back in exec_module (reload and pickling go by it).
        self._own_specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        alias = module.__spec__  # the spec find_spec made, stamped on by the import system
        if alias is not None:
            module.__spec__ = self._own_specs.pop(alias.name)


if not any(isinstance(finder, _OldNames) for finder in sys.meta_path):
    sys.meta_path.insert(0, _OldNames())
sys.modules[__name__] = _algos
