"""Seconds per epoch of kgbias's loop for each distance, against squared L2 (the estimate's distance factors).

    KGBIAS_DATA_DIR=../shared/data python bench/bench_training_distances.py [--threads 1] [--epochs 3] [--rounds 2]

FB15k-237's default config (eight frozen negatives, dim 100, batch 4096), a few epochs per distance, the distances
alternated in rounds so that a change of load falls on all of them; the median epoch after the first of each run
(the first pays allocation). Prints each distance's best seconds per epoch and its ratio to squared L2: what
:data:`kgbias_core.embeddings.training_cost.DISTANCE_FACTORS` is read from.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import replace

import torch
from bench_training import kgbias_seconds_per_epoch  # bench/ is on the path when run from there

from kgbias_core.data.datasets import load_dataset
from kgbias_core.embeddings.config import DISTANCES, TrainConfig
from kgbias_core.embeddings.training import frozen_negatives


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--negatives", type=int, default=8)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    graph = load_dataset("fb15k237")
    base = replace(TrainConfig(), epochs=args.epochs, negatives_per_triple=args.negatives)
    negatives = frozen_negatives(graph.training.mapped_triples, n_entities=graph.training.num_entities,
                                 seed=base.seed, count=args.negatives)
    print(f"load average before: {os.getloadavg()[0]:.2f}; torch threads {args.threads}; FB15k-237, "
          f"{args.negatives} negatives, dim {base.dim}, batch {base.batch_size}, {args.epochs} epochs a run")
    best: dict[str, float] = {}
    for round_ in range(args.rounds):
        for distance in DISTANCES:
            seconds = kgbias_seconds_per_epoch(graph, replace(base, distance=distance), "cpu", negatives)
            best[distance] = min(best.get(distance, seconds), seconds)
            print(f"  round {round_ + 1}: {distance:<13} {seconds:.3f} s/epoch", flush=True)
    for distance in DISTANCES:
        print(f"{distance:<13} best {best[distance]:.3f} s/epoch, ratio to squared_l2 "
              f"{best[distance] / best['squared_l2']:.2f}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
