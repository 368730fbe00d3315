"""``agentgym bench`` runs the checkout's harness as ``python -m benchmarks`` in a child
process: the library never imports ``benchmarks`` (issue 33), and the harness that runs is
the checkout's even when another ``benchmarks`` package comes first on the user's path."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from agentgym.cli import cmd_bench, main

ROOT = Path(__file__).resolve().parents[2]

needs_checkout = pytest.mark.skipif(
    not (ROOT / "benchmarks" / "__main__.py").is_file(), reason="tests run outside a checkout"
)


@needs_checkout
def test_the_source_tree_is_recognised_as_a_checkout(tmp_path):
    """Before: the check looked for ``name = "agentgym"``, and the distribution's rename to
    agentgym-suite made every checkout "not a checkout"."""
    assert cmd_bench.find_checkout(ROOT) == ROOT
    other = tmp_path / "other"
    (other / "benchmarks").mkdir(parents=True)
    (other / "benchmarks" / "__main__.py").write_text("")
    (other / "pyproject.toml").write_text('[project]\nname = "agentgym-tools"\n')
    assert not cmd_bench._is_checkout(other)  # a look-alike project is not agentgym
    (other / "pyproject.toml").write_text('[project]\nname = "agentgym-suite"\n')
    assert cmd_bench._is_checkout(other)


def test_the_command_is_this_interpreter_running_the_harness_module():
    assert cmd_bench.bench_command(["core", "--quick"]) == [
        sys.executable,
        "-m",
        "benchmarks",
        "core",
        "--quick",
    ]


@needs_checkout
def test_bench_runs_the_harness_in_a_child_and_never_imports_it(monkeypatch, capfd):
    monkeypatch.chdir(ROOT)
    for name in [n for n in sys.modules if n.split(".")[0] == "benchmarks"]:
        monkeypatch.delitem(sys.modules, name)  # other tests import the harness on purpose
    assert main(["bench", "no-such-benchmark"]) == 2
    assert "unknown benchmarks" in capfd.readouterr().err  # the harness's own refusal
    assert not any(name.split(".")[0] == "benchmarks" for name in sys.modules)


@needs_checkout
def test_a_benchmarks_package_first_on_a_safe_path_is_not_run(tmp_path, monkeypatch, capfd):
    """Under PYTHONSAFEPATH ``python -m`` leaves the working directory off the path; the
    checkout still comes before a decoy on PYTHONPATH."""
    decoy = tmp_path / "benchmarks"
    decoy.mkdir()
    (decoy / "__init__.py").write_text("")
    marker = tmp_path / "decoy-ran"
    (decoy / "__main__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    monkeypatch.setenv("PYTHONSAFEPATH", "1")
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    )
    monkeypatch.chdir(ROOT)
    assert main(["bench", "no-such-benchmark"]) == 2
    assert not marker.exists()
    assert "unknown benchmarks" in capfd.readouterr().err
