"""Why the Newton step overshoots on FB13 (issue 25): how many margin terms sit at their kink, per model.

The Newton step (:mod:`kgbias_core.influence.prediction`) models J near the trained theta* as smooth: the active
margin terms [gamma + psi(z) - psi(z')]_+ > 0 with their curvature, the others absent. A term whose slack
gamma + psi(z) - psi(z') is within a hair of 0 breaks that model: an inactive one turns on as soon as the step
moves it, and pulls back; an active one turns off. Where many terms sit there, theta* is a kink-dominated optimum
(the subgradient condition holds with fractional weights on those terms), and a retrain moves far less than the
smooth step. For each model this prints and writes:

- the share of margin terms (all K per triple) that are active, and the shares within ``eps * gamma`` of the kink
  on either side, for a few ``eps``;
- |grad J(theta*)| (the active set as computed) against |sum_{z in S} grad L(z)| of the model's audited edit (the
  top 16% of the moving triples of its audit occupation, :mod:`kgbias_core.tasks.prediction_audit`): at a smooth
  optimum the first is 0;
- the audit's retrained / predicted ratio, read from the model's stored audit.

    python experiments/whatif_accuracy/kink_share.py --models /work/store/fb13-transe ... --out kinks.csv
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.commands.common import write_text
from kgbias_core.embeddings.objective import negatives_count, transe_distance
from kgbias_core.embeddings.store import StoredModel, load_model
from kgbias_core.influence.prediction import objective_gradient, removal_gradient
from kgbias_core.tasks.prediction_audit import audit_occupation, audit_set
from kgbias_core.whatif.step_ratio import saved_prediction_audit

#: Distances from the kink, as fractions of the margin gamma.
EPSILONS = (0.005, 0.025, 0.1)


def slacks(model: StoredModel) -> torch.Tensor:
    """gamma + psi(z) - psi(z'_j) of every margin term: [K, n] (> 0: active)."""
    n = model.triples.shape[0]
    k = negatives_count(model.frozen_negatives, n)
    entities, relations = model.entity_embeddings.detach(), model.relation_embeddings.detach()
    positive = transe_distance(entities=entities, relations=relations, triples=model.triples,
                               distance=model.config.distance)
    negative = transe_distance(entities=entities, relations=relations, triples=model.frozen_negatives,
                               distance=model.config.distance).view(k, n)
    return model.config.margin + positive - negative


def _norm(vector) -> float:
    return float(sum(float(part.pow(2).sum()) for part in vector) ** 0.5)


def kink_row(model_dir: Path) -> dict:
    """One model's row (module docstring)."""
    model = load_model(model_dir)
    analysis = ModelAnalysis(model)
    slack = slacks(model)
    gamma = model.config.margin
    row = {"model": model.name, "negatives": slack.shape[0], "distance": model.config.distance,
           "l2": model.config.l2, "epochs": model.config.epochs, "active": float((slack > 0).float().mean())}
    for eps in EPSILONS:
        row[f"active_within_{eps}"] = float(((slack > 0) & (slack < eps * gamma)).float().mean())
        row[f"inactive_within_{eps}"] = float(((slack <= 0) & (slack > -eps * gamma)).float().mean())
    audit = saved_prediction_audit(model_dir)
    # the stored audit's own edit, whose ratio is read below (an audit made before today's rule keeps its occupation)
    occupation = str(audit["occupation"].iloc[0]) if audit is not None and not audit.empty else audit_occupation(
        analysis)
    _, k, removed = audit_set(analysis, occupation)
    residual = _norm(objective_gradient(model))
    edit = _norm(removal_gradient(model, removed))
    ratio = (float(audit["retrained"].iloc[0] / audit["predicted"].iloc[0])
             if audit is not None and not audit.empty else float("nan"))
    return {**row, "audit_occupation": occupation, "audit_k": k, "grad_at_optimum": residual, "grad_of_edit": edit,
            "grad_ratio": residual / edit, "audit_ratio": ratio}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    frame = pd.DataFrame([kink_row(path) for path in args.models])
    write_text(frame.to_csv(index=False, float_format="%.4f"), str(args.out))
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(frame.to_string(index=False, float_format=lambda v: f"{v:.4f}"))


if __name__ == "__main__":
    main()
