"""Does training reproduce itself bit for bit on this device? Two runs of each variant, same seed.

    python3 experiments/gpu/training_determinism.py --dataset fb15k237 --epochs 5

Variants of the embedding lookup inside :func:`~kgbias_core.embeddings.training.train_transe`:

- ``embedding``: the loop's own lookup, without the deterministic switch the loop turns on by itself
  on a GPU (:func:`~kgbias_core.embeddings.training.reproducible`); ``embedding, deterministic``: with it;
- ``index_select`` (backward: ``index_add_``) and ``indexing`` (``entities[ids]``, backward:
  ``index_put_(accumulate=True)``) instead of ``functional.embedding``, each also deterministic.

Prints, per variant, whether the two runs' weights are equal, their largest difference, and the
median seconds per epoch. Measured: on the CPU only ``indexing`` without the switch varies; on an
H100 ``embedding`` and ``index_select`` without it vary (their gradients are added atomically), and
every variant with it repeats (``experiments/gpu/results/gpu_h100.txt``).
"""

from __future__ import annotations

import argparse
import statistics
import time
from contextlib import contextmanager, nullcontext
from dataclasses import replace

import torch

from kgbias_core.data.datasets import load_dataset
from kgbias_core.embeddings import training
from kgbias_core.embeddings.config import default_train_config
from kgbias_core.embeddings.objective import residual_distance


def _index_select_distance(*, entities, relations, triples):
    u = entities.index_select(0, triples[:, 0]) + relations.index_select(0, triples[:, 1]) \
        - entities.index_select(0, triples[:, 2])
    return residual_distance(u)


def _indexing_distance(*, entities, relations, triples):
    return residual_distance(entities[triples[:, 0]] + relations[triples[:, 1]] - entities[triples[:, 2]])


LOOKUPS = {"index_select": _index_select_distance, "indexing": _indexing_distance}


@contextmanager
def variant(lookup: str, deterministic: bool):
    shipped, switch = training.transe_distance, training.reproducible
    before = torch.are_deterministic_algorithms_enabled()
    if lookup in LOOKUPS:
        training.transe_distance = LOOKUPS[lookup]
    # The loop turns deterministic kernels on by itself (training.reproducible): off for the plain variants.
    training.reproducible = lambda device: nullcontext()
    torch.use_deterministic_algorithms(deterministic)
    try:
        yield
    finally:
        training.transe_distance, training.reproducible = shipped, switch
        torch.use_deterministic_algorithms(before)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default="fb15k237")
    parser.add_argument("--epochs", type=int, default=5)
    args = parser.parse_args()
    graph = load_dataset(args.dataset)
    config = replace(default_train_config(args.dataset), epochs=args.epochs)
    device = training.default_device()
    triples = graph.training.mapped_triples.clone()
    n_entities, n_relations = graph.training.num_entities, graph.training.num_relations
    negatives = training.frozen_negatives(triples, n_entities=n_entities, seed=config.seed)
    print(f"device {device}, {args.dataset}, {args.epochs} epochs, torch {torch.__version__}")
    for lookup, deterministic in [("embedding", False), ("embedding", True), ("index_select", False),
                                  ("index_select", True), ("indexing", False), ("indexing", True)]:
        runs, per_epoch = [], []
        for _ in range(2):
            stamps = [time.perf_counter()]

            def clock(*_: object, stamps=stamps) -> None:
                if device.type == "cuda":
                    torch.cuda.synchronize()
                stamps.append(time.perf_counter())

            with variant(lookup, deterministic):
                result = training.train_transe(triples=triples, negatives=negatives, n_entities=n_entities,
                                               n_relations=n_relations, config=config, device=device,
                                               on_epoch=clock)
            runs.append(result.entity_embeddings)
            per_epoch += [b - a for a, b in zip(stamps[1:], stamps[2:], strict=False)]
        diff = float((runs[0] - runs[1]).abs().max())
        print(f"{lookup:12s} deterministic={deterministic!s:5s}: runs equal {torch.equal(*runs)!s:5s} "
              f"max |diff| {diff:.2e}, {statistics.median(per_epoch):.4f} s/epoch", flush=True)


if __name__ == "__main__":
    main()
