#!/usr/bin/env bash
# Installs everything the tests need, then runs the whole suite (fast and slow tests, browser test).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
exec python3 -m pytest -q "$@"
