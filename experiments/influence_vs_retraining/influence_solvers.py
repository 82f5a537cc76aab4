"""Which Hessian approximation predicts retraining: the diagonal closed form against conjugate gradients.

    python experiments/influence_vs_retraining/influence_solvers.py --model cached_models/fb13-transe \
        --runs experiments/influence_vs_retraining/out/influence_accuracy_fb13.csv [--dampings 25 85] [--threads 1]

``--runs`` is the CSV of ``validate_influence.py`` beside this script (occupation, kind, k, predicted, actual):
masked retrains without the closed form's top/bottom/random-k sets. For the same sets this prints
the closed form's prediction (METHODS §4: the diagonal Hessian alpha_e + lambda) and that of an
exact damped solve (H + lambda I)^{-1} grad B_gr by conjugate gradients with full-batch
Hessian-vector products (METHODS §4, "measured alternatives"), with Pearson r against the retrained
changes and the least-squares scale actual/predicted of the targeted sets. When the closed form
fails and CG does not, the diagonal approximation is to blame, not the influence functions.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embeddings.store import load_model
from kgbias_core.influence.iterative import conjugate_gradient_solve, group_bias_rhs, influence_from_solution
from kgbias_core.influence.retraining_check import removal_set


def agreement(predicted: np.ndarray, actual: np.ndarray, targeted: np.ndarray) -> tuple[float, float]:
    """(Pearson r over every set, least-squares scale actual/predicted over the targeted sets)."""
    r = float(np.corrcoef(predicted, actual)[0, 1]) if len(actual) > 2 else float("nan")
    p = predicted[targeted]
    return r, float(p @ actual[targeted] / (p @ p))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--runs", required=True)
    parser.add_argument("--dampings", nargs="+", type=float, default=None,
                        help="lambda of the CG solves (default: 3x and 10x the model's)")
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = load_model(args.model)
    analysis = ModelAnalysis(model)
    runs = pd.read_csv(args.runs)
    dampings = args.dampings or [3 * model.damping, 10 * model.damping]
    rows = []
    for occupation, mine in runs.groupby("occupation", sort=False):
        index = analysis.groups.index(str(occupation))
        closed = analysis.influence(str(occupation))
        sets = [removal_set(closed, kind=kind, k=int(k)) for kind, k in zip(mine["kind"], mine["k"], strict=True)]
        actual, targeted = mine["actual"].to_numpy(float), (mine["kind"] != "random").to_numpy()
        methods = {f"closed form (lambda {model.damping:.1f})": closed}
        for damping in dampings:
            start = time.perf_counter()
            solution = conjugate_gradient_solve(model, group_bias_rhs(analysis.context, index), damping=damping,
                                                iterations=args.iterations)
            methods[f"CG (lambda {damping:.1f}, {time.perf_counter() - start:.0f} s)"] = influence_from_solution(
                analysis.context, model, solution)
        for method, influence in methods.items():
            predicted = np.array([float(influence[s].sum()) for s in sets])
            r, scale = agreement(predicted, actual, targeted)
            rows.append({"occupation": occupation, "method": method, "runs": len(sets), "r": r,
                         "scale actual/predicted": scale,
                         "predicted": " ".join(f"{p:+.3f}" for p in predicted)})
        rows.append({"occupation": occupation, "method": "retrained", "runs": len(sets),
                     "predicted": " ".join(f"{a:+.3f}" for a in actual)})
    with pd.option_context("display.width", 250, "display.max_colwidth", 120):
        print(pd.DataFrame(rows).to_string(index=False, float_format=lambda x: f"{x:.3f}"))


if __name__ == "__main__":
    main()
