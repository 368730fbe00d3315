"""The package installs anywhere (issue 37): its name, its wheel and sdist, a fresh venv.

* The distribution is ``agentgym-suite`` (``agentgym`` on the package index is an unrelated
  project); every install hint in the code and the docs names it.
* The supported Pythons (3.11 and 3.12) are stated in the metadata and the README, and each
  is tested: an sdist is built from the working tree, a wheel from that sdist, and the wheel
  is installed into a fresh virtual environment (no ``--system-site-packages``, no checkout
  on the path), on Debian's Python 3.11 as a non-root user (``nobody``) and on Python 3.12.
  There ``agentgym demo`` runs (families whose parts are missing skipped, each with the line
  ``agentgym doctor`` prints), ``agentgym new-env`` writes its package, and the core tests
  (:data:`CORE_TESTS`, which need only the core install and the test tools) pass.

The dependencies come from a wheelhouse filled once from the package index and kept under
the test cache (``tests/venvs.py``), so later runs install offline.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.venvs import cache_root

ROOT = Path(__file__).resolve().parent.parent
DIST = "agentgym-suite"
#: The tests that need only the core install plus TEST_TOOLS (no extra, no system part).
CORE_TESTS = [
    "tests/test_core_contract.py",
    "tests/test_core_contract_boundaries.py",
    "tests/test_core_parser_errors.py",
    "tests/test_core_rng_state.py",
    "tests/test_parsing.py",
    "tests/test_parsing_boundaries.py",
    "tests/test_sokoban.py",
    "tests/test_check_rules.py",
    "tests/test_wrappers.py",
    "tests/test_registry_and_cli.py",
    "tests/test_package_attributes.py",
    "tests/trajectory/test_trajectory_format.py",
]
TEST_TOOLS = ["pytest", "hypothesis", "psutil"]
NOBODY = 65534


# ---- the name and the stated Pythons (fast) -------------------------------------------------


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_distribution_is_agentgym_suite_with_its_own_extras():
    project = _pyproject()["project"]
    assert project["name"] == DIST
    extras = project["optional-dependencies"]
    assert extras["all"][0].startswith(f"{DIST}[") and extras["dev"][0] == f"{DIST}[docs]"
    assert project["scripts"] == {"agentgym": "agentgym.cli:main"}  # the command keeps its name


#: The old distribution name with extras (a pip target), not part of a longer name.
_OLD_NAME = re.compile(r"(?<![\w./-])agentgym\[")


def test_no_message_or_page_names_the_old_distribution():
    """Every install hint (errors, doctor fixes, docs, set-up) names agentgym-suite."""
    files = [
        p
        for pattern in ("*.py", "*.md", "*.sh", "*.toml", "*.txt", "*.tmpl")
        for p in ROOT.rglob(pattern)
        if not {".git", "runs", "build", ".venv"} & set(p.relative_to(ROOT).parts)
        and ".egg-info" not in str(p)
        and p.name != "CHANGELOG.md"  # history: entries say what was true then
    ]
    assert len(files) > 100
    found = [
        f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
        for p in files
        for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1)
        if _OLD_NAME.search(line) or re.search(r"pip install (-U )?agentgym(\s|$|['\"])", line)
    ]
    assert not found, "\n".join(found)


def test_the_supported_pythons_are_stated_in_the_metadata_and_the_readme():
    project = _pyproject()["project"]
    assert project["requires-python"] == ">=3.11"
    stated = {c.rsplit(" ", 1)[1] for c in project["classifiers"] if "Python :: 3." in c}
    assert stated == {"3.11", "3.12"}
    readme = (ROOT / "README.md").read_text()
    assert "Python 3.11 and 3.12" in readme and "pip install" in readme


# ---- the wheel and the sdist (slow) ------------------------------------------------------


def _source_tree(dest: Path) -> None:
    """The files a checkout holds (tracked, and new files git does not ignore)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, (n.decode() for n in listed)):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


_BUILD = "import sys; from setuptools import build_meta as b; print(getattr(b, sys.argv[1])(sys.argv[2]))"


def _build(kind: str, source: Path, out: Path) -> Path:
    """PEP 517 ``build_sdist``/``build_wheel`` of setuptools (what ``python -m build`` calls)."""
    done = subprocess.run(
        [sys.executable, "-c", _BUILD, f"build_{kind}", str(out)],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return out / done.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(sdist, wheel): the sdist from the working tree, the wheel from the unpacked sdist."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout to list the source files")
    work = tmp_path_factory.mktemp("dists")
    source, out = work / "source", work / "dist"
    source.mkdir()
    out.mkdir()
    _source_tree(source)
    sdist = _build("sdist", source, out)
    with tarfile.open(sdist) as tar:
        tar.extractall(work / "unpacked", filter="data")
    (unpacked,) = (work / "unpacked").iterdir()
    return sdist, _build("wheel", unpacked, out)


@pytest.mark.slow
def test_the_wheel_holds_every_package_its_data_and_the_metadata(dists):
    sdist, wheel = dists
    assert sdist.name == "agentgym_suite-0.1.0.tar.gz"
    assert wheel.name == "agentgym_suite-0.1.0-py3-none-any.whl"
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in (
        "agentgym/py.typed",
        "agentgym/scaffold/templates/env.py.tmpl",
        "agentgym/envs/grid/sokoban.py",
        "agentgym/envs/code/tasks.jsonl",
        "agentgym/simulators/browser/static/observe.js",
        "agentgym/wrappers/chat.py",
    ):
        assert needed in names, needed
    meta = zipfile.ZipFile(wheel).read("agentgym_suite-0.1.0.dist-info/METADATA").decode()
    assert "Name: agentgym-suite" in meta and "Requires-Python: >=3.11" in meta
    assert "Classifier: Programming Language :: Python :: 3.12" in meta


# ---- a fresh venv per supported Python (slow) ----------------------------------------------


def _real_python(version: str) -> str | None:
    """An interpreter of ``version``: Debian's (readable by every user), else the one
    ``python3.X`` on PATH runs, else pyenv's (``$PYENV_ROOT/versions/3.X.*``)."""
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    installed = sorted(pyenv.glob(f"{version}.*/bin/python{version}"), reverse=True)
    candidates = [f"/usr/bin/python{version}", shutil.which(f"python{version}"), *installed]
    for candidate in candidates:
        if candidate and os.path.exists(candidate):
            done = subprocess.run(
                [candidate, "-c", "import sys, venv, ensurepip; print(sys.executable)"],
                capture_output=True,
                text=True,
            )
            if done.returncode == 0:
                return done.stdout.strip()
    return None


def _world_usable(path: str) -> bool:
    """Whether every user can run ``path`` (no parent folder closed to others)."""
    real = Path(path).resolve()
    return all(p.stat().st_mode & 0o001 for p in real.parents) and bool(real.stat().st_mode & 0o005)


def _requirements(wheel: Path) -> list[str]:
    """The wheel's core requirements (no extras)."""
    meta = zipfile.ZipFile(wheel).read("agentgym_suite-0.1.0.dist-info/METADATA").decode()
    return [
        line.split(":", 1)[1].strip()
        for line in meta.splitlines()
        if line.startswith("Requires-Dist:") and "extra ==" not in line
    ]


def _wheelhouse(python: str, wheel: Path) -> Path:
    """The core requirements and the test tools as wheels for ``python`` (filled once)."""
    wanted = sorted(_requirements(wheel) + TEST_TOOLS)
    key = hashlib.sha256("\n".join([python, *wanted]).encode()).hexdigest()[:12]
    house = cache_root() / f"wheelhouse-{Path(python).name}-{key}"
    if not (house / ".complete").is_file():
        shutil.rmtree(house, ignore_errors=True)
        subprocess.run(
            [python, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
             "--only-binary=:all:", "-d", str(house), *wanted],
            check=True,
            timeout=900,
        )  # fmt: skip
        (house / ".complete").write_text("\n".join(wanted))
    return house


@pytest.fixture
def user_dir() -> Iterator[Path]:
    """A folder under /tmp any user can own (pytest's own tmp folder is root's, mode 0700)."""
    path = Path(tempfile.mkdtemp(prefix="agentgym-wheel-", dir="/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _prepare(work: Path, wheel: Path, house: Path, uid: int | None) -> None:
    """The wheel, the wheelhouse, the core tests and a pytest.ini, owned by ``uid``."""
    shutil.copy2(wheel, work / wheel.name)
    shutil.copytree(house, work / "wheels")
    shutil.copytree(ROOT / "tests", work / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    (work / "pytest.ini").write_text(
        "[pytest]\naddopts = -p no:cacheprovider --import-mode=importlib\nmarkers =\n"
        + "".join(f"    {m}: {m}\n" for m in ("slow", "browser", "sandbox", "ray"))
    )
    if uid is not None:
        for path in [work, *work.rglob("*")]:
            os.chown(path, uid, uid, follow_symlinks=False)


def _runner(work: Path, uid: int | None):
    env = {
        "HOME": str(work),
        "PATH": f"{work / 'venv' / 'bin'}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }

    def run(*cmd: str, timeout: float = 900) -> subprocess.CompletedProcess:
        kwargs = {"user": uid, "group": uid, "extra_groups": []} if uid is not None else {}
        return subprocess.run(
            list(cmd), cwd=work, env=env, capture_output=True, text=True, timeout=timeout, **kwargs
        )

    return run


def _skipped_lines(demo: str) -> list[str]:
    """The doctor lines the demo printed for the families it skipped."""
    lines = demo.split("Skipped families", 1)[1].splitlines()[1:] if "Skipped" in demo else []
    return [ln.strip() for ln in lines if ln.strip().startswith("[MISSING]")]


@pytest.mark.slow
@pytest.mark.parametrize("version", ["3.11", "3.12"])
def test_the_wheel_in_a_fresh_venv_runs_the_demo_new_env_and_the_core_tests(
    dists, user_dir, version
):
    python = _real_python(version)
    if python is None:
        pytest.skip(f"no Python {version} with venv and ensurepip on this machine")
    # as a non-root user wherever the interpreter allows it (pyenv's lives in root's 0700 home)
    uid = NOBODY if os.geteuid() == 0 and _world_usable(python) else None
    if version == "3.11":
        assert uid is not None or os.geteuid() != 0, "Debian's Python 3.11 should run as nobody"
    _, wheel = dists
    _prepare(user_dir, wheel, _wheelhouse(python, wheel), uid)
    run = _runner(user_dir, uid)

    made = run(python, "-m", "venv", "venv")
    assert made.returncode == 0, made.stderr
    py = str(user_dir / "venv" / "bin" / "python")
    installed = run(py, "-m", "pip", "install", "--quiet", "--no-index", "--find-links", "wheels",
                    wheel.name, *TEST_TOOLS)  # fmt: skip
    assert installed.returncode == 0, installed.stderr[-3000:]
    where = run(py, "-c", "import agentgym, sys; print(agentgym.__file__); print(sys.version)")
    assert where.stdout.startswith(str(user_dir / "venv")), where.stdout + where.stderr
    assert where.stdout.splitlines()[1].startswith(version)

    demo = run("agentgym", "demo", "--episodes", "1", "--out", "demo")
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    rows = {ln.split()[0]: ln.split() for ln in demo.stdout.splitlines() if "agentgym/" in ln}
    for family in ("games", "household", "users"):  # the core install's families
        assert rows[family][2] == "100%", demo.stdout
    skipped = [f for f, row in rows.items() if row[2] == "skipped"]
    assert skipped, demo.stdout  # this venv has no extras: some family must be skipped
    assert all(row[2] in ("100%", "skipped") for row in rows.values()), demo.stdout
    doctor = run("agentgym", "doctor").stdout.splitlines()
    for line in _skipped_lines(demo.stdout):
        assert line in {d.strip() for d in doctor}, line  # the very line the doctor prints

    scaffold = run("agentgym", "new-env", "GridWalk")
    assert scaffold.returncode == 0, scaffold.stderr
    assert (user_dir / "grid-walk" / "grid_walk" / "env.py").is_file()

    tests = run(py, "-m", "pytest", "-q", "-m", "not slow", *CORE_TESTS, timeout=1200)
    assert tests.returncode == 0, tests.stdout[-4000:] + tests.stderr[-2000:]
    assert re.search(r"\d+ passed", tests.stdout) and " failed" not in tests.stdout
