#!/usr/bin/env bash
# Installs kgbias and starts the dashboard (http://localhost:8501). Without a data directory it
# opens on the built-in synthetic graph. For FB15k-237 and FB13, point it at the folder holding
# fb15k237/ and fb13/: `bash scripts/start.sh --data-dir DIR` (or set KGBIAS_DATA_DIR).
# Every other argument goes to `streamlit run` (e.g. --server.port 8600).
set -euo pipefail
cd "$(dirname "$0")/.."
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --data-dir)
      [[ $# -ge 2 ]] || { echo "error: start.sh: --data-dir needs a folder" >&2; exit 2; }
      export KGBIAS_DATA_DIR="$2"; shift 2 ;;
    --data-dir=*) export KGBIAS_DATA_DIR="${1#--data-dir=}"; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
if [[ -n "${KGBIAS_DATA_DIR:-}" && ! -d "$KGBIAS_DATA_DIR" ]]; then
  echo "error: start.sh: the data directory $KGBIAS_DATA_DIR does not exist" >&2
  exit 2
fi
bash scripts/setup.sh
# kgbias_app.launch is `streamlit run dashboard.py` with the heavy imports done before the first visitor.
exec python3 -m kgbias_app.launch --server.headless true "${args[@]}"
