"""Seconds per epoch of kgbias's deterministic TransE loop against PyKEEN's plain pipeline.

    KGBIAS_DATA_DIR=../shared/data python bench/bench_training.py [--dim 200] [--batch 8000] [--epochs 3]

Same data (FB15k-237 train), dimension, batch size, optimiser (Adam), margin loss with one negative
per positive; PyKEEN's sLCWA loop draws fresh negatives each batch, kgbias's reuses frozen ones.
Target: ratio kgbias / PyKEEN <= 1.1. Both run in this one process, alternately, on the same device.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace

import torch

from kgbias_core.data.datasets import load_dataset  # noqa: E402
from kgbias_core.embeddings.config import TrainConfig  # noqa: E402
from kgbias_core.embeddings.training import default_device, frozen_negatives, train_transe  # noqa: E402


def pykeen_seconds_per_epoch(graph, config: TrainConfig, device: torch.device) -> float:
    """PyKEEN's own sLCWA training loop (what its pipeline runs, minus the final evaluation)."""
    from pykeen.losses import MarginRankingLoss
    from pykeen.models import TransE
    from pykeen.training import SLCWATrainingLoop
    from pykeen.training.callbacks import TrainingCallback

    times: list[float] = []
    last = [0.0]

    class Clock(TrainingCallback):
        def post_epoch(self, epoch: int, epoch_loss: float, **kwargs: object) -> None:
            now = time.perf_counter()
            times.append(now - last[0])
            last[0] = now

    model = TransE(triples_factory=graph.training, embedding_dim=config.dim, scoring_fct_norm=2,
                   power_norm=True, entity_constrainer=None, loss=MarginRankingLoss(margin=config.margin),
                   random_seed=config.seed).to(device)
    loop = SLCWATrainingLoop(model=model, triples_factory=graph.training, optimizer="adam",
                             optimizer_kwargs={"lr": config.lr}, negative_sampler="basic",
                             negative_sampler_kwargs={"num_negs_per_pos": 1})
    last[0] = time.perf_counter()
    loop.train(triples_factory=graph.training, num_epochs=config.epochs, batch_size=config.batch_size,
               use_tqdm=False, use_tqdm_batch=False, callbacks=Clock())
    return statistics.median(times[1:] or times)


def kgbias_seconds_per_epoch(graph, config: TrainConfig, device: torch.device | str,
                             negatives: torch.Tensor | None = None) -> float:
    """Median seconds of an epoch after the first (which pays allocation) of kgbias's loop; ``negatives``: the
    frozen ones to use (default: one per triple from the config's seed)."""
    triples = graph.training.mapped_triples
    if negatives is None:
        negatives = frozen_negatives(triples, n_entities=graph.training.num_entities, seed=config.seed)
    times: list[float] = []
    last = [0.0]

    def clock(epoch: int, n_epochs: int, loss: float) -> None:
        now = time.perf_counter()
        times.append(now - last[0])
        last[0] = now

    last[0] = time.perf_counter()
    train_transe(triples=triples, negatives=negatives, n_entities=graph.training.num_entities,
                 n_relations=graph.training.num_relations, config=config, device=device, on_epoch=clock)
    return statistics.median(times[1:] or times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dim", type=int, default=200)
    parser.add_argument("--batch", type=int, default=8000)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2, help="alternate the two loops this many times")
    args = parser.parse_args()
    device = default_device()
    graph = load_dataset("fb15k237")
    config = replace(TrainConfig(), dim=args.dim, batch_size=args.batch, epochs=args.epochs)
    print(f"device {device}, torch threads {torch.get_num_threads()}, dim {args.dim}, batch {args.batch}")
    ours, theirs = [], []
    for _ in range(args.rounds):
        ours.append(kgbias_seconds_per_epoch(graph, config, device))
        theirs.append(pykeen_seconds_per_epoch(graph, config, device))
        print(f"  kgbias {ours[-1]:.3f} s/epoch   PyKEEN sLCWA {theirs[-1]:.3f} s/epoch", flush=True)
    ratio = min(ours) / min(theirs)
    print(f"best of {args.rounds}: kgbias {min(ours):.3f} s/epoch, PyKEEN {min(theirs):.3f} s/epoch, "
          f"ratio {ratio:.2f} (target <= 1.1: {'ok' if ratio <= 1.1 else 'MISSED'})")


if __name__ == "__main__":
    main()
