"""What a removal's step costs per model, before it runs (issue 25): kgbias_core.influence.step_cost, timed here.

For each model: its active margin pairs, the |H| operator's build, one product (each timed ``--repeats`` times, the
last kept), the distance's typical product count, and the lab's estimate of a step. Where the analysis keeps |H|
(squared L2; L2 since 2026-12-07; every distance since the afternoon of that day), the estimate's build is about 0
and ``kept_build_s`` is the one build every later step reuses;
``step_s`` is one lab prediction (``predict_removal``) of the model's audit set, timed after it.
``first_step_s`` is that prediction as an analysis's first, its |H| built inside it: a fresh analysis whose active
terms are already read (the lab's influence table reads them before anyone predicts).

    python experiments/whatif_accuracy/step_cost.py --models M1 M2 --threads 1 --out results/step_cost.csv
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import pandas as pd
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.commands.common import write_text
from kgbias_core.embeddings.store import load_model
from kgbias_core.influence.prediction import predict_removal
from kgbias_core.influence.step_cost import removal_step_cost
from kgbias_core.tasks.prediction_audit import audit_occupation, audit_set


def first_step(path: Path) -> float:
    analysis = ModelAnalysis(load_model(path))
    occupation = audit_occupation(analysis)
    removed = audit_set(analysis, occupation)[2]
    start = time.perf_counter()
    predict_removal(analysis, occupation, removed)
    return time.perf_counter() - start


def cost_row(path: Path, repeats: int) -> dict:
    first = first_step(path)
    analysis = ModelAnalysis(load_model(path))
    active = analysis.active_terms
    start = time.perf_counter()
    kept = analysis.absolute_hvp  # built here once where the analysis keeps it
    kept_build = time.perf_counter() - start if kept is not None else 0.0
    costs = [removal_step_cost(analysis) for _ in range(repeats)]
    cost = costs[-1]
    occupation = audit_occupation(analysis)
    removed = audit_set(analysis, occupation)[2]
    start = time.perf_counter()
    predict_removal(analysis, occupation, removed)
    step = time.perf_counter() - start
    return {"model": path.name, "distance": analysis.model.config.distance,
            "active_pairs": int(active.sum()), "pairs": int(active.numel()), "kept_build_s": kept_build,
            "build_s": cost.build_s, "product_s": cost.product_s, "products": cost.products,
            "estimate_s": cost.seconds, "step_s": step, "first_step_s": first}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", type=Path, required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch threads {args.threads}; load average {os.getloadavg()[0]:.2f} at start")
    table = pd.DataFrame([cost_row(path, args.repeats) for path in args.models])
    print(table.round(3).to_string(index=False))
    write_text(table.to_csv(index=False, float_format="%.4f"), str(args.out))


if __name__ == "__main__":
    main()
