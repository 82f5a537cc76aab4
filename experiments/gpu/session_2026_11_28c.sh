#!/usr/bin/env bash
# The second device call of the 2026-11-28 afternoon session (issue 24): the L1 distance with eight frozen negatives
# reached a pooled MRR of 0.262 in the first call (squared L2: 0.194); four variants of it, one sweep process each,
# link prediction only, now that L1 models are ranked by torch.cdist (the first call's L1 ranking took 288 s).
#   usage (device run, carry .whl and .devpack): bash experiments/gpu/session_2026_11_28c.sh SECONDS
set -u
LIMIT=${1:-170}
source experiments/gpu/steps.sh
SWEEP="python3 experiments/default_models/sweep.py --dataset ${SWEEP_DATA:-fb15k237} --device ${SWEEP_DEVICE:-cuda}
  --no-influence --store /tmp/sweep --threads 1"
i=0
for config in distance=l1,negatives=32 distance=l1,negatives=8,margin=4 distance=l1,negatives=8,epochs=160 \
    distance=l1,negatives=8,dim=200; do
  bg l1_$i timeout $(( $(left) - 15 )) $SWEEP --runs $RES/objective_l1_$i.csv --config $config; i=$(( i + 1 ))
done
await l1_0 l1_1 l1_2 l1_3
for f in "$RES"/objective_l1_*_models.csv; do python3 -c "import pandas as pd; print(pd.read_csv('$f')[
  ['config', 'train_s', 'final_loss', 'mrr', 'hits@1', 'hits@10', 'lp_s']].to_string(index=False, header=False))"; done
pack; echo "## done at $(( $(date +%s) - T0 )) s"
