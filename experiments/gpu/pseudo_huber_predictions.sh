#!/usr/bin/env bash
# Issue 25's GPU target for the pseudo-Huber step (<= 1 s a prediction): each graph's default config with
# --distance pseudo_huber and eight frozen negatives, trained on the device, then bench/bench_prediction.py with the
# model's tensors there (three IF-REMOVE predictions; every |H| product term by term through embedding_bag), and the
# same on the CPU of the device machine, one thread, for the ratio. About 20 s (FB15k-237) and 60-100 s (FB13) of
# training on an H200, a minute of benches each.
#   usage (device run, carry .whl and .devpack): bash experiments/gpu/pseudo_huber_predictions.sh SECONDS
#   GRAPHS="fb15k237" limits the graphs; a CPU rehearsal needs a CPU's own set-up instead of steps.sh.
set -u
LIMIT=${1:-500}
source experiments/gpu/steps.sh
for GRAPH in ${GRAPHS:-fb15k237 fb13}; do
  M=/tmp/m/$GRAPH-pseudo_huber-k8-transe
  [ -d $M ] || step train_$GRAPH 150 $KG train --dataset $GRAPH --device ${DEVICE:-cuda} --distance pseudo_huber \
    --negatives 8 --out $M
  [ -d $M ] || continue
  step bench_gpu_$GRAPH 60 python3 bench/bench_prediction.py --model $M --threads 1 --occupations 3 --device ${DEVICE:-cuda}
  step bench_cpu_$GRAPH 90 python3 bench/bench_prediction.py --model $M --threads 1 --occupations 3 --device cpu
  cp $M/config.json $RES/config_${GRAPH}_pseudo_huber.json; pack
done
echo "## done at $(( $(date +%s) - T0 )) s"
