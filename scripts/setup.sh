#!/usr/bin/env bash
# Install agentgym and everything it needs on a fresh Debian 12 machine, as root.
#
#   bash scripts/setup.sh          # runtime: system packages + agentgym-suite[all]
#   bash scripts/setup.sh --dev    # the same + test and lint tools
#
# System packages: Chromium (web envs, viewer tests), tesseract (OCR tool of the visual envs),
# bubblewrap (sandbox layer), DejaVu fonts (rendered tasks); with --dev, valgrind (the lockstep
# benchmark counts instructions under callgrind). PyTorch is installed first as the
# CPU build (torch==2.13.0), so that no other requirement pulls a CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."

extras="all"
if [[ "${1:-}" == "--dev" ]]; then extras="all,dev"; fi
PYTHON="${PYTHON:-python3}"

APT_PACKAGES=(chromium tesseract-ocr tesseract-ocr-eng bubblewrap fonts-dejavu-core)
if [[ "$extras" == *dev* ]]; then APT_PACKAGES+=(valgrind); fi
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "[setup] apt-get install ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! "$PYTHON" -c "import torch" 2>/dev/null; then
  echo "[setup] pip install torch==2.13.0 (CPU build)"
  "$PYTHON" -m pip install -q --disable-pip-version-check "${AGENTGYM_TORCH_SPEC:-torch==2.13.0}"
fi

# The distribution was called "agentgym" before it became "agentgym-suite" (that name on the
# package index is another project's). An editable install of this checkout under the old
# name would keep its console script and finder: remove it first.
if "$PYTHON" - "$PWD" <<'PY'
import importlib.metadata as md, json, sys
try:
    url = json.loads(md.distribution("agentgym").read_text("direct_url.json") or "{}").get("url")
except md.PackageNotFoundError:
    sys.exit(1)
sys.exit(0 if url == "file://" + sys.argv[1] else 1)
PY
then
  echo "[setup] pip uninstall agentgym (this checkout's install under the old name)"
  "$PYTHON" -m pip uninstall -y -q --root-user-action=ignore agentgym
fi

echo "[setup] pip install -e .[$extras]"
"$PYTHON" -m pip install -q --disable-pip-version-check --root-user-action=ignore -e ".[$extras]"

if [[ "$extras" == *dev* ]]; then
  echo "[setup] RL frameworks for the adapter tests (requirements/frameworks*.txt)"
  "$PYTHON" -m pip install -q --disable-pip-version-check --root-user-action=ignore -r requirements/frameworks.txt
  "$PYTHON" -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-deps -r requirements/frameworks-nodeps.txt
fi

# pyenv installs console scripts behind shims that exist only after a rehash.
if command -v pyenv >/dev/null 2>&1; then pyenv rehash || true; fi
echo "[setup] done: try 'agentgym list'"
