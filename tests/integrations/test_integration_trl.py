"""TRL environment_factory: typed tool methods TRL can read, reset from a row, env reward."""

from __future__ import annotations

import inspect
import pathlib

import pytest

from agentgym.integrations.trl import environment_class

ENV_ID = "agentgym/Sokoban-Tiny-v0"


def _trl_probe(instance):
    """TRL GRPOTrainer's own probe of an environment instance (trl 1.x)."""
    has_reset = has_reward = False
    methods = []
    for name, _ in inspect.getmembers(type(instance), predicate=inspect.isfunction):
        if name == "reset":
            has_reset = True
        elif name == "get_reward":
            has_reward = True
        elif not name.startswith("_"):
            methods.append(getattr(instance, name))
    return has_reset, has_reward, methods


def test_class_exposes_the_env_tools_as_typed_methods():
    Env = environment_class(ENV_ID)
    env = Env()
    has_reset, has_reward, methods = _trl_probe(env)
    assert has_reset and has_reward and [m.__name__ for m in methods] == ["move"]
    get_json_schema = pytest.importorskip("transformers.utils").get_json_schema
    schema = get_json_schema(methods[0])  # what TRL puts in the prompt
    params = schema["function"]["parameters"]
    assert params["required"] == ["direction"]
    assert params["properties"]["direction"]["enum"] == ["up", "down", "left", "right"]


def test_reset_from_row_step_and_reward():
    Env = environment_class(ENV_ID)
    a, b = Env(), Env()
    assert a.reset(prompt=[], seed=3) == b.reset(prompt=[], seed=3)
    out = a.move(direction="up")
    assert isinstance(out, str) and out
    assert a.get_reward() == pytest.approx(a._session.total_reward) != 0.0
    with pytest.raises(ValueError):  # TRL shows the message to the model as the tool result
        a.move(direction="sideways")


def test_installed_trl_has_the_environment_factory_contract():
    """The installed TRL's GRPOTrainer source still probes reset/get_reward (read, not imported:
    importing the trainer costs seconds)."""
    import importlib.util

    spec = importlib.util.find_spec("trl")
    if spec is None:
        pytest.skip("trl is not installed")
    src = (pathlib.Path(spec.origin).parent / "trainer" / "grpo_trainer.py").read_text()
    assert "environment_factory" in src
    assert 'member_name == "reset"' in src and 'member_name == "get_reward"' in src
