#!/usr/bin/env bash
# One device call (issues 25 and 24): the what-if accuracy bench on the FB13 default (never run: each masked retrain
# is 10 minutes of the 2-core CPU, about 45 s on an H200) and on the FB15k-237 default at the full size
# (8 occupations, 2% and 16% top and bottom sets, random 16% sets), the Add prediction's GPU time with the replay that
# reads frozen rows in place, and PyKEEN's epoch rate on the published TransE config (the reference of issue 24).
# Retrains are launch-bound (a few percent of the GPU each), so the bench's occupations run as parallel shards on
# the one GPU, each on one CPU core; each shard appends its rows as they finish, and the results are re-packed at
# the end, so a call cut short still returns every finished row.
#   usage (device run, carry .whl and .devpack): bash experiments/gpu/session_2026_11_28.sh SECONDS
set -u
LIMIT=${1:-560}
source experiments/gpu/steps.sh
M13=/tmp/m/fb13-transe; M15=/tmp/m/fb15k237-transe; W=experiments/whatif_accuracy/whatif_accuracy.py
BENCH="--occupations 8 --no-calibration --no-exact --threads 1 --retrain-threads 1"
noise() { python3 -c "from kgbias_core.tasks.whatif import noise_band_task as t
from kgbias_core.jobs import Progress; print(t('$1', device='cuda').run(Progress()).to_string())"; }
audit() { python3 -c "from kgbias_core.tasks.prediction_audit import prediction_audit_task as t
from kgbias_core.jobs import Progress; print(t('$1', device='cuda').run(Progress()).to_string())"; }
shard() {  # shard MODEL BASE I N OUTSTEM: the targeted sets, then the random ones, of the shard's occupations
  python3 $W --model "$1" --base "$2" --shard "$3/$4" $BENCH --kinds top,bottom --sets 2,16 --runs "$5$3.csv" \
    && python3 $W --model "$1" --base "$2" --shard "$3/$4" $BENCH --kinds random --sets 16 --runs "$5$3.csv"
}
merge() {  # merge OUTSTEM MODEL: the shards' rows in one CSV, its summary and the occupations' names
  python3 -c "import glob, pandas as pd; f = sorted(glob.glob('$1_[0-9]*.csv')); print(len(f), 'shards');
pd.concat([pd.read_csv(x) for x in f]).to_csv('$1.csv', index=False)" \
    && python3 $W --summarize-only --model "$2" --runs "$1.csv" --summary "$1_summary.csv" > "$1_summary.txt" 2>&1
  cat "$1_summary.txt"
}

bg train13 $KG train --dataset fb13 --device cuda --out $M13
step train15 60 $KG train --dataset fb15k237 --device cuda --out $M15
# The Add timing first, beside one training only: what a person waits for in the lab.
step predict15 60 sh -c "python3 bench/bench_prediction.py --model $M15 --device cuda --add --threads 1 > $RES/prediction_fb15k237_k8_h200_replay.txt 2>&1; rc=\$?; cat $RES/prediction_fb15k237_k8_h200_replay.txt; exit \$rc"
bg audit15 audit $M15
bg noise15 timeout $(( $(left) - 60 )) bash -c "$(declare -f noise); noise $M15"  # 3 seeds' retrains: the floor
bg base15 python3 $W --model $M15 --base $RES/fb15k237_base.npz --base-only --runs /dev/null --retrain-threads 1
bg pykeen timeout 150 python3 experiments/link_prediction_reference/pykeen_transe.py --dataset fb15k237 --epochs 5 \
  --device cuda --data-dir /tmp/data --out $RES/pykeen_rate_probe.csv
await train13
cat $RES/train13.log | grep -v "epoch"
bg audit13 audit $M13
bg noise13 timeout $(( $(left) - 60 )) bash -c "$(declare -f noise); noise $M13"
bg base13 python3 $W --model $M13 --base $RES/fb13_base.npz --base-only --runs /dev/null --retrain-threads 1
await audit15 base15
for i in 0 1 2 3; do bg s15_$i timeout $(( $(left) - 100 )) bash -c "$(declare -f shard); W=$W BENCH='$BENCH'; shard $M15 $RES/fb15k237_base.npz $i 4 $RES/fb15k237_k8_whatif_h200_"; done
await audit13 base13
for i in 0 1 2 3 4 5 6 7; do bg s13_$i timeout $(( $(left) - 100 )) bash -c "$(declare -f shard); W=$W BENCH='$BENCH'; shard $M13 $RES/fb13_base.npz $i 8 $RES/fb13_whatif_h200_"; done
await pykeen s15_0 s15_1 s15_2 s15_3 s13_0 s13_1 s13_2 s13_3 s13_4 s13_5 s13_6 s13_7  # (a bare wait would wait for the log's tee)
for f in audit15 base15 noise15 pykeen audit13 base13 noise13; do echo "### $f"; grep -v "epoch\|batch\|Evaluating\|it/s" $RES/$f.log | tail -20; done
merge $RES/fb15k237_k8_whatif_h200 $M15
merge $RES/fb13_whatif_h200 $M13; pack
# The shards ran before the noise band was in: the sets predicted again with it as the floor (no retrain).
await noise15 noise13
for pair in "fb15k237_k8_whatif_h200 $M15" "fb13_whatif_h200 $M13"; do set -- $pair
  timeout $(( $(left) - 8 )) python3 $W --model $2 --runs $RES/$1.csv --rescore $RES/$1_rescored.csv --summary $RES/$1_rescored_summary.csv \
    --threads 1 > $RES/$1_rescored.txt 2>&1; tail -8 $RES/$1_rescored.txt; done
for m in /tmp/m/*; do [ -f $m/config.json ] && cp $m/config.json $RES/config_$(basename $m).json; done
for m in $M13 $M15; do cp $m/results/prediction_audit.csv $RES/audit_$(basename $m).csv 2>/dev/null; done; pack
echo "## done at $(( $(date +%s) - T0 )) s"
