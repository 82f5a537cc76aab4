#!/usr/bin/env bash
# Prepared for the next session lent a GPU (issues 29, 25): FB13's plans verified by retraining, and Add's
# prediction timed on the GPU with the replay that reads frozen rows in place. One call, about 9 minutes:
#   the FB13 default family (3 seeds; one negative took ~45 s each on an H200, the eight of the default since
#   2026-12-06 are unmeasured there and 1.3-1.8x on the CPU), its prediction audit (one retrain: the step scale
#   the first plan reads), five plans against the family's seed band, each verified by a masked retrain on the
#   GPU (the base was trained there), then the eight-negative FB15k-237 default and bench_prediction --add.
# usage (device run, carry .whl and .devpack): bash experiments/gpu/fb13_plans.sh SECONDS
set -u
LIMIT=${1:-540}
source experiments/gpu/steps.sh
M13=/tmp/m/fb13-transe; M15=/tmp/m/fb15k237-transe
step train13 270 $KG train --dataset fb13 --device cuda --seeds 3 --out $M13
step audit13 60 python3 -c "from kgbias_core.tasks.prediction_audit import prediction_audit_task as t
from kgbias_core.jobs import Progress; print(t('$M13', device='cuda').run(Progress()).to_string())"
step plans13 240 python3 experiments/plan_verification/plan_verification.py --model $M13 --band seed \
  --step-scale auto --device cuda --occupations Actor Screenwriter Singer Architect Artist \
  --out $RES/fb13_plans_seed_band.csv
step collateral13 30 python3 experiments/plan_verification/collateral_check.py --model $M13 --bands seed \
  --out $RES/fb13_collateral_check_seed_band.csv
step train15 40 $KG train --dataset fb15k237 --device cuda --out $M15
step predict15 60 sh -c "python3 bench/bench_prediction.py --model $M15 --device cuda --add --threads 1 > $RES/prediction_fb15k237_k8_gpu.txt 2>&1; rc=\$?; cat $RES/prediction_fb15k237_k8_gpu.txt; exit \$rc"
for m in /tmp/m/*; do [ -f $m/config.json ] && cp $m/config.json $RES/config_$(basename $m).json; done; pack
echo "## done at $(( $(date +%s) - T0 )) s"
