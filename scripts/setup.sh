#!/usr/bin/env bash
# Installs what kgbias needs on a fresh machine (idempotent: quick when all is there).
# Usage: bash scripts/setup.sh [dev]   -- "dev" adds the test tools and headless Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
# pip takes ~6 s to find that nothing is missing, on every start: skip it when the requirements and the Python
# are those of the last install here (.setup-stamp) and the packages are still importable.
stamp=".setup-stamp"
want="$( (cat requirements.txt pyproject.toml; command -v python3; python3 -V) | sha256sum | cut -d' ' -f1)"
if [ "${1:-}" != dev ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && python3 -c "
import importlib.util as u, sys
sys.exit(any(u.find_spec(m) is None for m in ('torch', 'pykeen', 'streamlit', 'plotly', 'kgbias_core')))"; then
  exit 0
fi
python3 -m pip install -q --disable-pip-version-check -r requirements.txt
python3 -m pip install -q --disable-pip-version-check --no-deps -e .
if [ "${1:-}" = dev ]; then
  python3 -m pip install -q --disable-pip-version-check -r requirements-dev.txt
  if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
  fi
fi
echo "$want" > "$stamp.tmp" && mv "$stamp.tmp" "$stamp"
