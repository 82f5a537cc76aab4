#!/usr/bin/env bash
# Installs everything the tests need, then runs the whole suite (fast and slow tests, browser test).
# The test files are spread over up to 4 worker processes (pytest-xdist, one file per worker at a time: module
# fixtures are built once), one per core: most tests are one Python thread, so a 2-core machine runs two at once.
# KGBIAS_TEST_WORKERS=1 runs them in this process, in file order.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
workers="${KGBIAS_TEST_WORKERS:-$(python3 -c 'import os; print(max(1, min(len(os.sched_getaffinity(0)), 4)))')}"
if [ "$workers" -gt 1 ]; then
  set -- -n "$workers" --dist loadfile "$@"
fi
exec python3 -m pytest -q "$@"
