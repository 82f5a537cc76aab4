"""Link prediction of a pseudo_huber TransE: the ranker's blocked in-place [b, E, d] pass against the same sum
through :func:`~kgbias_core.embeddings.objective.residual_distance` on 64 MB blocks (the first version), one run.

    python bench/bench_pseudo_huber_ranker.py --model /work/store/sweep/fb15k237-sweep-c652af784ca3 [--threads 1]
        [--batches 3] [--out bench/results/pseudo_huber_ranker_cpu.csv]

Per path: the best seconds of ``--batches`` batches of 256 tail queries (the test split's first), their largest
score difference, and then the whole filtered link prediction (heads and tails, ``link_prediction_sides``) through
the product's path with its seconds, MRR and peak RSS. There is no cdist for this distance (L1 and L2 have one),
so the pass over every entity is the ranker's whole cost.
"""

from __future__ import annotations

import argparse
import csv
import resource
import time
from pathlib import Path

import torch

from kgbias_core.embeddings.objective import residual_distance
from kgbias_core.embeddings.store import load_model
from kgbias_core.evaluation import link_prediction as lp

#: The first version's block: 64 MB of floats.
OLD_BLOCK = 1 << 24


def old_distances(q: torch.Tensor, entities: torch.Tensor) -> torch.Tensor:
    """The first version: residual_distance over [b, s, d] blocks of 64 MB."""
    step = max(1, OLD_BLOCK // (q.shape[0] * q.shape[1]))
    return torch.cat([residual_distance(q[:, None, :] - entities[None, start:start + step], distance="pseudo_huber")
                      for start in range(0, entities.shape[0], step)], dim=1)


def best_seconds(function, q, entities, rounds: int) -> tuple[float, torch.Tensor]:
    best, out = float("inf"), None
    for _ in range(rounds):
        started = time.perf_counter()
        out = function(q, entities)
        best = min(best, time.perf_counter() - started)
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("bench/results/pseudo_huber_ranker_cpu.csv"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = load_model(args.model)
    if model.config.distance != "pseudo_huber":
        raise SystemExit(f"error: {args.model}: distance {model.config.distance!r}, not pseudo_huber")
    entities, relations = model.entity_embeddings, model.relation_embeddings
    test = lp._test_queries(model, False)[:256]
    q = entities[test[:, 0]] + relations[test[:, 1]]  # [256, d]: the tail queries' points
    old, old_out = best_seconds(old_distances, q, entities, args.batches)
    new, new_out = best_seconds(lp._pseudo_huber_distances, q, entities, args.batches)
    difference = float((old_out - new_out).abs().max())
    print(f"one batch of 256 queries x {entities.shape[0]} entities x d {entities.shape[1]}: first version "
          f"{old:.2f} s, ranker {new:.2f} s ({old / new:.1f}x); largest score difference {difference:.2e}", flush=True)
    started = time.perf_counter()
    sides = lp.link_prediction_sides(model)
    seconds = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    both = sides["both"]
    print(f"link prediction, {int(both['n'])} ranks (heads and tails): {seconds:.1f} s, MRR {both['mrr']:.4f}, "
          f"Hits@10 {both['hits@10']:.4f}; peak RSS {peak_mb:.0f} MB", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["model", "threads", "batch_old_s", "batch_new_s", "speedup", "max_score_difference",
                         "ranks", "link_prediction_s", "mrr", "hits@10", "peak_rss_mb"])
        writer.writerow([Path(args.model).name, args.threads, f"{old:.3f}", f"{new:.3f}", f"{old / new:.2f}",
                         f"{difference:.3e}", int(both["n"]), f"{seconds:.1f}", f"{both['mrr']:.4f}",
                         f"{both['hits@10']:.4f}", f"{peak_mb:.0f}"])


if __name__ == "__main__":
    main()
