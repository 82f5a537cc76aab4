"""Seconds per epoch of the training loop's dense Adam: PyTorch's foreach path (the loop's) against its
per-tensor path (the CPU's default, which trained every model stored before 2026-12-01), and whether the two
give the same weights bit for bit.

    KGBIAS_DATA_DIR=../shared/data python bench/bench_optimizer.py [--datasets fb15k237 fb13] [--negatives 8]
        [--epochs 2] [--threads 1] [--out bench/results/optimizer_paths_cpu.csv]

Each graph's default config with ``--negatives`` frozen negatives, trained ``--epochs`` epochs from the seed by
each path in turn in this one process, alternately for ``--rounds`` rounds; a row per graph: the best seconds per
epoch of each, their ratio (per-tensor / foreach: the speed-up), peak RSS of the process, and the largest weight
difference (0: bit for bit).
Why it matters: dense Adam updates every row of the table at every step, so on FB13 (75,043 entities) it is about
half of a step, and every masked retrain pays it.
"""

from __future__ import annotations

import argparse
import csv
import resource
import time
from dataclasses import replace
from pathlib import Path

import torch

from kgbias_core.data.datasets import load_dataset
from kgbias_core.embeddings.config import default_train_config
from kgbias_core.embeddings.training import frozen_negatives, train_transe


def seconds_per_epoch(graph, config, *, foreach: bool) -> tuple[float, torch.Tensor]:
    """One training of ``config`` with Adam's ``foreach`` forced: (seconds per epoch, entity weights)."""
    adam = torch.optim.Adam

    def forced(params, **options):
        options["foreach"] = foreach
        return adam(params, **options)

    triples = graph.training.mapped_triples
    negatives = frozen_negatives(triples, n_entities=graph.training.num_entities, seed=config.seed,
                                 count=config.negatives_per_triple)
    torch.optim.Adam = forced  # the loop builds its optimiser through torch.optim.Adam
    try:
        start = time.perf_counter()
        result = train_transe(triples=triples, negatives=negatives, n_entities=graph.training.num_entities,
                              n_relations=graph.training.num_relations, config=config, device="cpu")
        return (time.perf_counter() - start) / config.epochs, result.entity_embeddings
    finally:
        torch.optim.Adam = adam


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--datasets", nargs="+", default=["fb15k237", "fb13"])
    parser.add_argument("--negatives", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=2, help="alternate the two paths this many times")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch threads {torch.get_num_threads()}, {args.epochs} epochs per path, {args.negatives} negatives")
    rows = []
    for name in args.datasets:
        graph = load_dataset(name)
        config = replace(default_train_config(name), negatives_per_triple=args.negatives, epochs=args.epochs)
        per_tensor, foreach, difference = float("inf"), float("inf"), 0.0
        for _ in range(args.rounds):
            seconds, a = seconds_per_epoch(graph, config, foreach=False)
            per_tensor = min(per_tensor, seconds)
            seconds, b = seconds_per_epoch(graph, config, foreach=True)
            foreach = min(foreach, seconds)
            difference = max(difference, float((a - b).abs().max()))
        rows.append({
            "dataset": name, "threads": args.threads, "entities": graph.training.num_entities,
            "negatives": args.negatives,
            "per_tensor_s_per_epoch": round(per_tensor, 3), "foreach_s_per_epoch": round(foreach, 3),
            "speedup": round(per_tensor / foreach, 3), "max_weight_difference": difference,
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        })
        print(rows[-1], flush=True)
    if args.out:
        with args.out.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)


if __name__ == "__main__":
    main()
