#!/usr/bin/env bash
# Issue 25 asks for the old estimator's coverage beside the new one's on the same sets. The FB15k-237 bench on the
# H200 ran with --no-calibration (the old estimator's calibration is 13 masked retrains, 45-90 minutes on the 2-core
# CPU, about 4 on an H200). This trains the default again with seed 0, calibrates it (kgbias calibrate), gives it
# its audit and noise band alongside, and rescores the bench's rows: --rescore rebuilds each set (checked by its
# closed-form sum) and, the model now calibrated, fills the old estimator's columns. No set is retrained.
#   usage (device run, carry .whl and .devpack): bash experiments/gpu/old_estimator.sh SECONDS
#   rehearsal on a CPU: GRAPH=synthetic DEVICE=cpu DONE=experiments/whatif_accuracy/results/synthetic_default_whatif.csv
set -u
LIMIT=${1:-560}
source experiments/gpu/steps.sh
GRAPH=${GRAPH:-fb15k237}; export DEVICE=${DEVICE:-cuda}; M=/tmp/m/old-$GRAPH-transe
W=experiments/whatif_accuracy/whatif_accuracy.py
DONE=${DONE:-experiments/whatif_accuracy/results/fb15k237_k8_whatif_h200.csv}
[ -d $M ] || step train 90 $KG train --dataset $GRAPH --device $DEVICE --out $M
bg old_audit task prediction_audit prediction_audit_task $M
bg old_noise bash -c "$(declare -f task); task whatif noise_band_task $M"
bg old_calibrate $KG calibrate --model $M --out $RES/old_calibration_$GRAPH.csv
await old_audit old_noise old_calibrate
python3 -c "import pandas as pd; pd.read_csv('$DONE').drop(columns='name', errors='ignore').to_csv('$RES/old_done.csv',
  index=False)"
step rescore 10 python3 $W --model $M --runs $RES/old_done.csv --rescore $RES/${GRAPH}_old_rescored.csv \
  --summary $RES/${GRAPH}_old_rescored_summary.csv --threads 1
tail -12 $RES/old_calibrate.log; pack; echo "## done at $(( $(date +%s) - T0 )) s"
