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
  text, json...) are illustrations and never run.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
RUNS = ("python", "bash")

_FENCE = re.compile(
    r"(?:<!--\s*(?P<marker>file|not-run|background):\s*(?P<arg>[^\n]*?)\s*-->\s*\n)?"
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
            open(b["file"], "w").write(b["body"])
            continue
        print(f"=== {where}", flush=True)
        if b["background"]:
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
    )
    got = blocks_of(text)
    assert [(b.lang, b.file, b.skip, b.body) for b in got] == [
        ("python", "m.py", None, "X = 1\n"),
        ("bash", None, "needs a GPU (vLLM >= 0.8)", "nvidia-smi\n"),
        ("python", None, None, "print(X)\n"),
        ("toml", None, None, "[a]\n"),
        ("bash", None, None, "agentgym serve X\n"),
    ]
    assert got[-1].background == "127.0.0.1:8000"


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


RUNNABLE_PAGES = [
    p
    for p in PAGES
    if any(b.lang in RUNS and b.skip is None and b.file is None for b in blocks_of(p.read_text()))
]


@pytest.mark.slow
@pytest.mark.parametrize("page", RUNNABLE_PAGES, ids=_page_id)
def test_page_code_blocks_run_as_written(page, tmp_path):
    blocks = [
        b.__dict__
        for b in blocks_of(page.read_text())
        if b.skip is None and (b.file is not None or b.lang in RUNS)
    ]
    spec = tmp_path / "blocks.json"
    spec.write_text(json.dumps(blocks))
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", _DRIVER, str(spec)],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, (
        f"{_page_id(page)}: a code block failed as written\n"
        f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
