"""Why the L2 step costs minutes (issue 25): conjugate gradients against L2's stiff curvature, per norm floor.

On FB15k-237 with L2 and eight negatives a removal's step took 217-297 s at one thread, where L1's took 3-8 s on the
same graph. Two causes: a product costs 1.9 s against L1's 0.22 s (1.74M active margin pairs against 196k;
results/step_cost_fb15k237.csv), and conjugate gradients stopped at its cap of 200 products on Actor's top and bottom
16% sets (:data:`~kgbias_core.influence.prediction.CG_ITERATIONS`), short of the tolerance. This script is about the
second. L2's curvature per active term is (I - u u^T) / ||x|| (METHODS §4 with psi = ||x||_2): a
positive that training pinned at its kink, x = h + r - t near 0, is a stiff coupling of its three rows, up to
1 / L2_NORM_FLOOR times a median term's (:data:`~kgbias_core.influence.prediction.L2_NORM_FLOOR`).

For one synthetic graph trained with L2 (``local_refit.py --distance l2``'s: eight negatives, ``--epochs``), and
the sets of a ``local_refit.py`` OUT file of the same graph (their retrained change), this predicts every set again
with the norm floored at each of ``--floors`` (a share of the median active term's ||x||), CG run to the lab's
tolerance with no cap, and writes per floor: the products CG took (median, largest), the spread of retrained / step
over the targeted sets, and the share with the right sign; with the share of active terms whose ||x|| lies under
each floor. A higher floor is a softer curvature: fewer products, and another step.

    python experiments/whatif_accuracy/l2_conditioning.py --runs results/local_refit_read_synthetic_k8_e100_l2.csv \
        --seed 7 --epochs 100 --floors 0.001,0.01,0.1,0.3,1 --out results/l2_conditioning_s7.csv
"""

from __future__ import annotations

import argparse
import os
from dataclasses import replace
from pathlib import Path

import pandas as pd
import torch
from cg_tolerance import counting  # noqa: I001  (beside this file)
from whatif_accuracy import SYNTHETIC, SYNTHETIC_TRAINING  # noqa: I001  (beside this file)

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.commands.common import write_text
from kgbias_core.data.synthetic import generate_people_graph
from kgbias_core.embeddings.store import StoredModel
from kgbias_core.embeddings.training import train_model
from kgbias_core.influence import prediction
from kgbias_core.influence.retraining_check import removal_set

#: No cap: each solve runs to the lab's tolerance, so the products it takes are the conditioning's count.
UNCAPPED = 5000


def active_norms(model: StoredModel, active: torch.Tensor) -> torch.Tensor:
    """||h + r - t|| of each term |H| holds: a positive once (whatever its count of active pairs), each active
    negative, [m]; their median is the one :data:`~kgbias_core.influence.prediction.L2_NORM_FLOOR` is a share of."""
    triples, negatives = model.triples, model.frozen_negatives
    positive = torch.unique(active.nonzero().squeeze(1) % triples.shape[0])
    both = torch.cat([triples[positive], negatives[active]])
    entities, relations = model.entity_embeddings.detach(), model.relation_embeddings.detach()
    x = entities[both[:, 0]] + relations[both[:, 1]] - entities[both[:, 2]]
    return torch.linalg.vector_norm(x, dim=-1)


def floor_rows(analysis: ModelAnalysis, sets: pd.DataFrame, floors: list[float]) -> pd.DataFrame:
    """Per floor, per set of ``sets`` (columns occupation, kind, k, actual): the step with the norm floored there (|H|
    built once a floor, as a prediction builds it), CG to the lab's tolerance uncapped, and the products it took."""
    model, groups, active = analysis.model, analysis.groups, analysis.active_terms
    saved = prediction.L2_NORM_FLOOR, prediction.CG_ITERATIONS, prediction.L2_CG_ITERATIONS
    out = []
    try:
        prediction.CG_ITERATIONS = prediction.L2_CG_ITERATIONS = UNCAPPED
        for floor in floors:
            prediction.L2_NORM_FLOOR = floor
            operator = prediction.absolute_curvature_hvp(model, active=active)
            for row in sets.itertuples():
                removed = removal_set(analysis.influence(row.occupation), kind=row.kind, k=int(row.k))
                hvp = counting(operator)
                step = prediction.newton_removal_prediction(
                    model, removed=removed, groups=groups, occupation_index=groups.index(row.occupation),
                    negatives=None, tolerance=prediction.PREDICTION_TOLERANCE, active=active, hvp=hvp).point
                out.append({"floor": floor, "occupation": row.occupation, "kind": row.kind, "k": int(row.k),
                            "actual": row.actual, "step": step, "products": hvp.calls})
    finally:
        prediction.L2_NORM_FLOOR, prediction.CG_ITERATIONS, prediction.L2_CG_ITERATIONS = saved
    return pd.DataFrame(out)


def summary(rows: pd.DataFrame, norms: torch.Tensor) -> pd.DataFrame:
    """Per floor: products (median, largest), retrained / step (5, 50, 95%), sign right, and the share of active
    terms whose ||x|| lies under the floor (their curvature capped there)."""
    median = float(norms.median())
    out = []
    for floor, group in rows.groupby("floor", sort=False):
        ratio = group["actual"] / group["step"]
        out.append({"floor": floor, "sets": len(group), "products_median": float(group["products"].median()),
                    "products_max": int(group["products"].max()), "ratio_p5": float(ratio.quantile(0.05)),
                    "ratio_median": float(ratio.median()), "ratio_p95": float(ratio.quantile(0.95)),
                    "sign": float((ratio > 0).mean()),
                    "terms_under_floor": float((norms < floor * median).to(torch.float64).mean())})
    return pd.DataFrame(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", required=True, type=Path, help="a local_refit.py OUT file of the same graph")
    parser.add_argument("--seed", type=int, default=SYNTHETIC.seed)
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--floors", default="0.001,0.01,0.1,0.3,1")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--rows", type=Path, help="also write each set's step per floor here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch threads {args.threads}; load average {os.getloadavg()[0]:.2f} at start")
    graph = generate_people_graph(replace(SYNTHETIC, seed=args.seed))
    training = replace(SYNTHETIC_TRAINING, epochs=args.epochs, negatives_per_triple=8, distance="l2")
    analysis = ModelAnalysis(train_model(graph, training, name="synthetic-transe", device=torch.device("cpu")))
    runs = pd.read_csv(args.runs)
    sets = runs[runs["kind"].isin(["top", "bottom"])]
    rows = floor_rows(analysis, sets, [float(floor) for floor in args.floors.split(",")])
    if args.rows:
        write_text(rows.to_csv(index=False), str(args.rows))
    table = summary(rows, active_norms(analysis.model, analysis.active_terms))
    print(table.round(3).to_string(index=False))
    write_text(table.to_csv(index=False, float_format="%.4f"), str(args.out))


if __name__ == "__main__":
    main()
