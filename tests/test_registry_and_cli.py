"""Registry and command line: ids resolve from anywhere, mistakes get helpful messages."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest

import agentgym
from agentgym.error import UnknownEnvError
from agentgym.registry import register, resolve_id


def run_cli(*args: str, cwd: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agentgym", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=240,
    )


def test_gym_make_with_module_prefix_works_without_a_prior_import(tmp_path):
    code = (
        "import gymnasium as gym; e = gym.make('agentgym:agentgym/Sokoban-Tiny-v0'); "
        "o, i = e.reset(seed=0); print(i['task_id'])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("sokoban-5x5")


def test_unknown_id_suggests_close_matches():
    with pytest.raises(UnknownEnvError, match="Did you mean 'agentgym/Sokoban-Tiny-v0'"):
        resolve_id("Sokoban-Tny-v0")


def test_short_ids_and_prefixes_resolve():
    assert (
        resolve_id("Sokoban-Tiny-v0")
        == resolve_id("agentgym:agentgym/Sokoban-Tiny-v0")
        == "agentgym/Sokoban-Tiny-v0"
    )


def test_third_party_namespaces_register_and_list():
    register("acme/Counter-v0", "tests.fake_envs:CounterEnv", family="test")
    try:
        assert any(r.id == "acme/Counter-v0" for r in agentgym.list_envs("test"))
        env = gym.make("acme/Counter-v0")
        assert env.reset(seed=0)[1]["task_id"].startswith("counter-")
    finally:
        from agentgym import registry

        registry._RECORDS.pop("acme/Counter-v0")
        del gym.registry["acme/Counter-v0"]


def test_list_envs_filters_by_family():
    games = agentgym.list_envs("games")
    assert games and all(r.family == "games" for r in games)


def test_cli_list_and_check(tmp_path):
    out = run_cli("list", "--family", "games", cwd=tmp_path)
    assert out.returncode == 0 and "agentgym/Sokoban-Tiny-v0" in out.stdout
    out = run_cli("check", "Sokoban-Tiny-v0", cwd=tmp_path)
    assert out.returncode == 0 and "PASS" in out.stdout


def test_cli_unknown_id_is_a_message_not_a_traceback(tmp_path):
    out = run_cli("run", "Sokoban-Tny-v0", cwd=tmp_path)
    assert out.returncode == 2
    assert "Did you mean" in out.stderr and "Traceback" not in out.stderr


def test_cli_run_reports_oracle_success(tmp_path):
    out = run_cli(
        "run", "Sokoban-Tiny-v0", "--policy", "oracle", "--episodes", "3", "--quiet", cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    assert "success=100%" in out.stdout


def test_cli_help_lists_every_command():
    out = run_cli("--help")
    for command in ("list", "run", "demo", "check", "bench"):
        assert command in out.stdout


def test_python_m_agentgym_and_console_script_agree():
    exe = os.path.join(os.path.dirname(sys.executable), "agentgym")
    if not os.path.exists(exe):
        pytest.skip("console script not installed in this environment")
    a = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    assert a.stdout.strip() == f"agentgym {agentgym.__version__}"


def test_third_party_packages_register_through_the_entry_point_group(tmp_path):
    """A distribution declaring an ``agentgym.envs`` entry point is loaded by ``import agentgym``."""
    pkg = tmp_path / "acme_envs"
    pkg.mkdir()
    fake_envs = Path(__file__).with_name("fake_envs.py").read_text()
    (pkg / "counter.py").write_text(fake_envs)
    (pkg / "__init__.py").write_text(
        "from agentgym.registry import register\n"
        "def register_all():\n"
        "    register('acme/Counter-v1', 'acme_envs.counter:CounterEnv', family='acme')\n"
    )
    dist = tmp_path / "acme_envs-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-envs\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[agentgym.envs]\nacme = acme_envs:register_all\n")
    code = (
        "import gymnasium as gym, agentgym; "
        "print([r.id for r in agentgym.list_envs('acme')]); "
        "print(gym.make('acme/Counter-v1').reset(seed=0)[1]['task_id'][:8])"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["['acme/Counter-v1']", "counter-"]
