#!/usr/bin/env bash
# Installs what kgbias needs on a fresh machine (idempotent: quick when all is there).
# Usage: bash scripts/setup.sh [dev]   -- "dev" adds the test tools and headless Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
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
