"""Every code block in README.md and docs/ runs as written.

A page's blocks run in order, from a scratch directory, in one fresh interpreter (so a later
block may use what an earlier one defined, as a reader following the page would):

* ```` ```python ```` blocks are executed;
* ```` ```bash ```` blocks run with ``bash -euo pipefail`` (the ``agentgym`` command included);
* a block right after ``<!-- file: NAME -->`` is written to ``NAME`` instead (a module the
  page tells the reader to save);
* a block right after ``<!-- background: HOST:PORT -->`` (a server the page starts) runs in
  the background; the page goes on once HOST:PORT accepts connections, and the server is
  stopped when the page ends;
* a block right after ``<!-- not-run: REASON -->`` is skipped, and the reason is required:
  installs, GPU training recipes and commands of other programs. Other languages (toml,
  text, json...) are illustrations and never run;
* a block right after ``<!-- stand-in: openai HOST:PORT -->`` (the reader starts a model
  server, e.g. vLLM) is replaced by the fake OpenAI-compatible server of
  ``tests/fake_openai.py`` on that port, which logs every request to ``stand-in-requests.jsonl``.

Pages in :data:`VENV_PAGES` install a package of their own (``python -m pip install -e``), so
they run in a throw-away virtual environment that sees the installed agentgym
(``--system-site-packages``); nothing is installed outside it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
RUNS = ("python", "bash")

_FENCE = re.compile(
    r"(?:<!--\s*(?P<marker>file|not-run|background|stand-in):\s*(?P<arg>[^\n]*?)\s*-->\s*\n)?"
    r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
    flags=re.DOTALL | re.MULTILINE,
)


@dataclass(frozen=True)
class Block:
    lang: str
    body: str
    line: int
    file: str | None = None  # write the body to this file instead of running it
    skip: str | None = None  # the reason it is not run
    background: str | None = None  # HOST:PORT of the server this block starts
    stand_in: str | None = None  # "openai HOST:PORT": a fake server replaces this block


def blocks_of(text: str) -> list[Block]:
    out = []
    for m in _FENCE.finditer(text):
        line = text.count("\n", 0, m.start("lang")) + 1
        indent = m.group("indent")
        body = "".join(
            ln[len(indent) :] if ln.startswith(indent) else ln
            for ln in m.group("body").splitlines(keepends=True)
        )
        marker, arg = m.group("marker"), m.group("arg")
        out.append(
            Block(
                lang=m.group("lang"),
                body=body,
                line=line,
                file=arg if marker == "file" else None,
                skip=arg if marker == "not-run" else None,
                background=arg if marker == "background" else None,
                stand_in=arg if marker == "stand-in" else None,
            )
        )
    return out


def _page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


# The driver runs in a fresh interpreter inside the scratch directory: python blocks share
# one namespace, bash blocks run as subprocesses there, file blocks are written there.
_DRIVER = r"""
import json, os, signal, socket, subprocess, sys, time, traceback
blocks = json.load(open(sys.argv[1]))
REPO, STAND_IN_REPLY = sys.argv[2], sys.argv[3]
namespace = {"__name__": "__main__"}
sys.path.insert(0, ".")
servers = []


def wait_for(address, proc, where):
    host, port = address.rsplit(":", 1)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"FAILED: {where}: the server exited with {proc.returncode}")
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    sys.exit(f"FAILED: {where}: nothing listened on {address} within 120 s")


def run():
    for b in blocks:
        where = f"block at line {b['line']} ({b['lang']})"
        if b["file"]:
            os.makedirs(os.path.dirname(b["file"]) or ".", exist_ok=True)
            open(b["file"], "w").write(b["body"])
            continue
        print(f"=== {where}", flush=True)
        if b["stand_in"]:
            address = b["stand_in"].split()[1]
            cmd = [sys.executable, "-m", "tests.fake_openai", "--port", address.rsplit(":", 1)[1],
                   "--content", STAND_IN_REPLY, "--log", "stand-in-requests.jsonl"]
            env = {**os.environ, "PYTHONPATH": REPO}
            proc = subprocess.Popen(cmd, start_new_session=True, env=env)
            servers.append(proc)
            wait_for(address, proc, where)
        elif b["background"]:
            proc = subprocess.Popen(["bash", "-c", b["body"]], start_new_session=True)
            servers.append(proc)
            wait_for(b["background"], proc, where)
        elif b["lang"] == "python":
            try:
                exec(compile(b["body"], f"<{where}>", "exec"), namespace)
            except BaseException:
                traceback.print_exc()
                sys.exit(f"FAILED: {where}")
        else:
            done = subprocess.run(["bash", "-euo", "pipefail", "-c", b["body"]])
            if done.returncode != 0:
                sys.exit(f"FAILED: {where} exited {done.returncode}")


try:
    run()
finally:
    for proc in servers:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(proc.pid, signal.SIGKILL)
"""


def test_the_block_parser_reads_markers_languages_and_indented_fences():
    text = (
        "intro\n<!-- file: m.py -->\n```python\nX = 1\n```\n\n"
        "<!-- not-run: needs a GPU (vLLM >= 0.8) -->\n```bash\nnvidia-smi\n```\n"
        "- item:\n\n  ```python\n  print(X)\n  ```\n```toml\n[a]\n```\n"
        "<!-- background: 127.0.0.1:8000 -->\n```bash\nagentgym serve X\n```\n"
        "<!-- stand-in: openai 127.0.0.1:8041 -->\n```bash\nvllm serve M --port 8041\n```\n"
    )
    got = blocks_of(text)
    assert [(b.lang, b.file, b.skip, b.body) for b in got] == [
        ("python", "m.py", None, "X = 1\n"),
        ("bash", None, "needs a GPU (vLLM >= 0.8)", "nvidia-smi\n"),
        ("python", None, None, "print(X)\n"),
        ("toml", None, None, "[a]\n"),
        ("bash", None, None, "agentgym serve X\n"),
        ("bash", None, None, "vllm serve M --port 8041\n"),
    ]
    assert got[-2].background == "127.0.0.1:8000"
    assert got[-1].stand_in == "openai 127.0.0.1:8041" and got[-1].background is None


def test_every_skipped_block_says_why_and_most_blocks_run():
    ran = skipped = 0
    for page in PAGES:
        for b in blocks_of(page.read_text()):
            if b.lang not in RUNS:
                continue
            if b.skip is not None:
                assert b.skip.strip(), f"{_page_id(page)}:{b.line}: not-run needs a reason"
                skipped += 1
            else:
                ran += 1
    assert ran >= 20 and ran > 2 * skipped, (ran, skipped)


#: Pages that pip-install a package of their own: run in a throw-away virtual environment.
VENV_PAGES = {ROOT / "docs" / "own-env.md"}
#: What the stand-in model server answers every request with.
STAND_IN_REPLY = "<answer>5</answer>"

RUNNABLE_PAGES = [
    p
    for p in PAGES
    if p not in VENV_PAGES
    and any(b.lang in RUNS and b.skip is None and b.file is None for b in blocks_of(p.read_text()))
]


def _scratch_venv(where: Path) -> tuple[str, dict[str, str]]:
    """A virtual environment that sees the installed agentgym; its python and environment.

    ``python -m pip install`` inside it installs there only, offline, with the setuptools
    already installed (no build isolation, no index), and ``agentgym`` on its PATH runs its
    python, so envs installed there are visible to the command line.
    """
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(where)
    bin_dir = where / "bin"
    python = str(bin_dir / "python")
    cli = bin_dir / "agentgym"
    cli.write_text(f"#!{python}\nimport sys\nfrom agentgym.cli import main\nsys.exit(main())\n")
    cli.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "VIRTUAL_ENV": str(where),
        "PIP_NO_BUILD_ISOLATION": "0",  # pip's spelling of --no-build-isolation
        "PIP_NO_INDEX": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    env.pop("PYTHONPATH", None)
    return python, env


def _run_page(page: Path, tmp_path: Path) -> tuple[Path, subprocess.CompletedProcess]:
    blocks = [
        b.__dict__
        for b in blocks_of(page.read_text())
        if b.skip is None and (b.file is not None or b.lang in RUNS or b.stand_in)
    ]
    spec = tmp_path / "blocks.json"
    spec.write_text(json.dumps(blocks))
    work = tmp_path / "work"
    work.mkdir()
    python, env = sys.executable, None
    if page in VENV_PAGES:
        python, env = _scratch_venv(tmp_path / "venv")
    done = subprocess.run(
        [python, "-c", _DRIVER, str(spec), str(ROOT), STAND_IN_REPLY],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, (
        f"{_page_id(page)}: a code block failed as written\n"
        f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return work, done


@pytest.mark.slow
@pytest.mark.parametrize("page", RUNNABLE_PAGES, ids=_page_id)
def test_page_code_blocks_run_as_written(page, tmp_path):
    _run_page(page, tmp_path)


@pytest.mark.slow
def test_own_env_page_packages_checks_tests_and_evaluates_its_env(tmp_path):
    """docs/own-env.md as written: a package with an entry point, installed with pip in a
    scratch venv, passes `agentgym check` and its own pytest file, and `agentgym eval
    --policy openai` plays it against a stand-in server that receives the system prompt, the
    picture and the tool schema."""
    work, done = _run_page(ROOT / "docs" / "own-env.md", tmp_path)
    out = done.stdout
    assert "PASS mylab/ColorCount-v0: every conformance rule holds" in out
    assert re.search(r"^3 passed", out, flags=re.MULTILINE), out[-2000:]
    results = [json.loads(line) for line in (work / "results.jsonl").read_text().splitlines()]
    assert len(results) == 8
    requests = [
        json.loads(line) for line in (work / "stand-in-requests.jsonl").read_text().splitlines()
    ]
    first = requests[0]
    system, user = first["messages"][0], first["messages"][1]
    assert system["role"] == "system" and "Count the red cells" in system["content"]
    parts = user["content"]
    assert any(p.get("type") == "image_url" for p in parts), parts
    assert "describe_row" in [t["function"]["name"] for t in first["tools"]]
    # nothing was installed outside the scratch venv
    check = subprocess.run(
        [sys.executable, "-c", "import importlib.util as u; print(u.find_spec('mylab_envs'))"],
        capture_output=True,
        text=True,
    )
    assert check.stdout.strip() == "None"
