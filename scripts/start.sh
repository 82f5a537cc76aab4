#!/usr/bin/env bash
# Installs kgbias and starts the dashboard (http://localhost:8501). Without a data directory it
# opens on the built-in synthetic graph; set KGBIAS_DATA_DIR (or pass --data-dir) for FB15k-237.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec python3 -m streamlit run dashboard.py --server.headless true "$@"
