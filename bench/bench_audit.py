"""Keidar et al.'s relation audit of one stored model: where the time goes (issue: one model <= 60 s).

    python bench/bench_audit.py [--model cached_models/fb15k237-transe] [--threads 2]

Times, in one run: loading the model, the occupation classifier (held-out fit + 5-fold
cross-validated predictions, random forest), and DPD/PPD/TLB of every sensitive relation's values
(TLB is Fisher's one-step update per value), then the whole ``model_audit`` call. Prints the load
average before and after, since the machine is shared. Torch threads are pinned (--threads).
"""

from __future__ import annotations

import argparse
import os
import time

import torch

from kgbias_core.embeddings.pykeen_bridge import pykeen_model
from kgbias_core.embeddings.store import load_model
from kgbias_core.measures.occupation_classifier import classify_occupations, entity_feature_matrix
from kgbias_core.measures.relation_audit import model_audit, sensitive_relations


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="cached_models/fb15k237-transe")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"load average before: {os.getloadavg()[0]:.2f}; torch threads {args.threads}")

    start = time.perf_counter()
    model = load_model(args.model)
    module = pykeen_model(model, device="cpu")
    loaded = time.perf_counter()
    triples = model.triples
    occupation = model.relation_id(model.schema.occupation_relation)
    pairs = triples[triples[:, 1] == occupation][:, [0, 2]].numpy()
    predictions = classify_occupations(embeddings=entity_feature_matrix(module), person_occupations=pairs)
    classified = time.perf_counter()
    table = model_audit(model)
    done = time.perf_counter()
    n_values = int(table["n_values"].sum()) // 3
    print(f"model {model.name}: {model.triples.shape[0]:,} triples, {len(predictions.persons):,} classified persons, "
          f"{len(sensitive_relations(model))} relations, {n_values} values")
    print(f"load {loaded - start:.1f}s | classifier alone {classified - loaded:.1f}s | "
          f"whole model_audit (classifier + DPD/PPD/TLB) {done - classified:.1f}s")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
