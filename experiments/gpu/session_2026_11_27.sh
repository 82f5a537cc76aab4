#!/usr/bin/env bash
# One device call (issues 24 and 25): the eight-negative FB15k-237 default and the FB13 default family trained on
# the GPU, their B_gr and link prediction, the what-if prediction's GPU time, and two more-negatives points.
# Each step runs only while enough of the call's time is left; results are re-packed after each step, so a
# call cut at its limit still returns what finished. Needs .whl (PyKEEN's wheels) and .devpack (data, CPU
# reference) carried.   usage: bash experiments/gpu/session_2026_11_27.sh SECONDS [first|second]
set -u
LIMIT=${1:-520}
source experiments/gpu/steps.sh
if [ "${2:-first}" = first ]; then
M15=/tmp/m/fb15k237-transe; M13=/tmp/m/fb13-transe
step train15 60 $KG train --dataset fb15k237 --device cuda --out $M15
step measures15 20 $KG measures --model $M15 --device cuda --out $RES/fb15k237_k8_gpu_measures.csv
step lp15 20 $KG link-prediction --model $M15 --device cuda --out $RES/fb15k237_k8_gpu_lp.csv
step predict15 40 sh -c "python3 bench/bench_prediction.py --model $M15 --device cuda --add --threads 1 > $RES/prediction_fb15k237_k8_gpu.txt 2>&1; rc=\$?; cat $RES/prediction_fb15k237_k8_gpu.txt; exit \$rc"
step train13 150 $KG train --dataset fb13 --device cuda --seeds 3 --out $M13
step measures13 30 $KG measures --model $M13 --device cuda --out $RES/fb13_gpu_family_measures.csv
step lp13 40 python3 experiments/default_models/family_link_prediction.py --models $M13 $M13-s1 $M13-s2 --device cuda --out $RES/fb13_gpu_family_lp.csv
step drift13 20 python3 experiments/drift/drift.py --a $M13 --reference .devpack/fb13_cpu_measures.csv --out $RES/fb13_gpu_vs_cpu_drift.csv
step predict13 40 sh -c "python3 bench/bench_prediction.py --model $M13 --device cuda --add --threads 1 > $RES/prediction_fb13_gpu.txt 2>&1; rc=\$?; cat $RES/prediction_fb13_gpu.txt; exit \$rc"
fi
# Second call: more frozen negatives (the MRR against negatives curve) and where an Add prediction's time goes.
for k in 32 64; do
  step train15k$k $(( k * 2 )) $KG train --dataset fb15k237 --device cuda --negatives $k --out /tmp/m/fb15k237-k$k
  step lp15k$k 20 $KG link-prediction --model /tmp/m/fb15k237-k$k --device cuda --out $RES/fb15k237_k${k}_gpu_lp.csv
  if [ $k = 32 ]; then
    step train15 40 $KG train --dataset fb15k237 --device cuda --out /tmp/m/fb15k237-transe
    step profile_add 40 sh -c "python3 experiments/gpu/profile_add.py --model /tmp/m/fb15k237-transe --device cuda > $RES/profile_add_fb15k237_k8.txt 2>&1; rc=\$?; cat $RES/profile_add_fb15k237_k8.txt; exit \$rc"
  fi
done
for m in /tmp/m/*; do [ -f $m/config.json ] && cp $m/config.json $RES/config_$(basename $m).json; done; pack
echo "## done at $(( $(date +%s) - T0 )) s"
