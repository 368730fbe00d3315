"""Virtual environments for the tests that need another version of a package, built once.

``cached_venv(name, packages)`` makes (or reuses) a venv under the test cache folder
(``$AGENTGYM_TEST_CACHE``, default ``~/.cache/agentgym-tests``) that sees this interpreter's
site-packages (``--system-site-packages``, so agentgym and torch come from here) and has
``packages`` installed on top with ``pip --no-deps`` from the package index. The first run
downloads them from the index CI uses; later runs reuse the venv (a marker file says it is
complete, so a run killed half-way builds it again).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path


def cache_root() -> Path:
    """Where test venvs live (created on first use)."""
    root = os.environ.get("AGENTGYM_TEST_CACHE") or Path.home() / ".cache" / "agentgym-tests"
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def cached_venv(name: str, packages: list[str], timeout_s: float = 900.0) -> Path:
    """The python of a venv over this interpreter with ``packages`` added (``--no-deps``)."""
    key = hashlib.sha256("\n".join([sys.version, sys.prefix, *packages]).encode()).hexdigest()
    where = cache_root() / f"{name}-{key[:12]}"
    python = where / "bin" / "python"
    done = where / ".complete"
    if done.is_file():
        return python
    shutil.rmtree(where, ignore_errors=True)
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(where)
    # pip itself comes from the system site-packages and installs into the venv
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--no-deps",
         "--disable-pip-version-check", *packages],
        check=True,
        timeout=timeout_s,
    )  # fmt: skip
    done.write_text("\n".join(packages) + "\n")
    return python
