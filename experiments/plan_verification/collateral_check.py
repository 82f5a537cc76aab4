"""The collateral of verified plans against the Newton step (issue 29): which scale predicts it?

For every plan in a model's record of verified plans (``plan_verifications``: the lab's "Verify by retraining",
``plan_verification.py``), the removed triples are read from the verifying run's config, the Newton step of that
removal is computed once (|H|, as the planner's), and every bounded other occupation's change of B_gr (over the
base's persons) is predicted at theta + c Delta theta for c = the plan's step scale (what the planner checked the
collateral with) and c = 1 (the step as computed), and compared with the retrained change. No retrain is run.

Bands (``--bands``), as the planner sets them (:func:`kgbias_core.whatif.plan.collateral_bands`): ``noise``
(default), the model's noise band (retrains of the unedited graph under seeds 1-3, negatives kept); ``seed``, the
seed range of the model's family (max - min of B_gr over its members, each trained from its own seed with its
own negatives: :func:`kgbias_core.families.family_group_bias_band`).

    nice python experiments/plan_verification/collateral_check.py --model STORE/fb15k237-transe [--bands seed] \
        [--add-runs] --out experiments/plan_verification/results/fb15k237_k8_collateral_check.csv

``--add-runs``: also every retrained Add of the model (the lab's Add, ``kgbias debias --add``, a verified Add plan),
its collateral predicted by the Add prediction (the dummies replayed, then one Newton step: what an Add plan checks)
against the retrain's (rows ``edit`` = add; no step scale).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embeddings.store import load_model, read_config
from kgbias_core.families import family_group_bias_band
from kgbias_core.influence.prediction import PREDICTION_TOLERANCE, absolute_newton_step, addition_step
from kgbias_core.measures.group_bias import group_bias
from kgbias_core.tasks import saved_noise_band
from kgbias_core.whatif.edits import addition, edit_of_record
from kgbias_core.whatif.plan import PlanConfig, collateral_bands
from kgbias_core.whatif.step_ratio import saved_verifications, verified_of_kind


def add_rows(analysis: ModelAnalysis, model_dir: Path, *, bands: np.ndarray, before: np.ndarray) -> list[dict]:
    """One row per retrained Add of the model (runs beside it whose record says ``kind`` add and names it as base):
    every bounded other occupation's change predicted by the Add prediction (:func:`addition_step`, as
    :func:`~kgbias_core.whatif.plan_addition.plan_addition` checks an Add plan's collateral) against the retrain's."""
    base, groups = analysis.model, analysis.groups
    negatives = None if analysis.negatives.exact else analysis.negatives.negatives
    rows = []
    for run_dir in sorted(model_dir.parent.iterdir()):
        config = read_config(run_dir) if (run_dir / "config.json").is_file() else {}
        record = config.get("edit") or {}
        if record.get("kind") != "add" or config.get("base_model") != base.name:
            continue
        edit = edit_of_record(base, record)
        if edit is None:
            continue
        step = addition_step(base, addition(base, edit), negatives=negatives, active=analysis.active_terms,
                             hvp=analysis.absolute_hvp)
        after = step.after.double().numpy()
        predicted = after[[step.groups_after.index(label) for label in groups.labels]] - before
        run = load_model(run_dir)
        # the other occupations' groups are the base's (the dummies join the target only)
        actual = group_bias(entity_embeddings=run.entity_embeddings[:base.n_entities],
                            relation_embeddings=run.relation_embeddings, groups=groups).double().numpy() - before
        bounded = np.isfinite(bands)
        bounded[groups.index(edit.occupation)] = False
        rows.append(_report({"plan": run_dir.name, "edit": "add", "name": groups.names[groups.index(edit.occupation)],
                             "k": len(edit.added_entities), "bounded": int(bounded.sum()),
                             **agreement(predicted[bounded], actual[bounded], bands[bounded])}))
    return rows


def agreement(predicted: np.ndarray, actual: np.ndarray, bands: np.ndarray) -> dict:
    """How a prediction of the bounded occupations' changes meets their retrained changes, against their bands."""
    return {
        "outside_predicted_unscaled": int((np.abs(predicted) > bands).sum()),
        "outside_retrained": int((np.abs(actual) > bands).sum()),
        "r_unscaled_retrained": float(np.corrcoef(predicted, actual)[0, 1]),
        "median_ratio_retrained_unscaled": float(np.median(np.abs(actual) / np.maximum(np.abs(predicted), 1e-12))),
        "median_abs_retrained": float(np.median(np.abs(actual))), "median_band": float(np.median(bands)),
    }


def _report(row: dict) -> dict:
    print(", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()), flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--bands", choices=("noise", "seed"), default="noise")
    parser.add_argument("--add-runs", action="store_true",
                        help="also every Add run of the model in its store (Du's Add, retrained): the Add prediction's "
                             "collateral, as an Add plan checks it, against the retrain")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch threads {args.threads}; load average {os.getloadavg()[0]:.2f} at start", flush=True)
    base = load_model(args.model)
    analysis = ModelAnalysis(base)
    groups = analysis.groups
    before = analysis.group_bias().double().numpy()
    seed_band = family_group_bias_band(args.model) if args.bands == "seed" else None
    bands, source = collateral_bands(analysis, noise=saved_noise_band(args.model), config=PlanConfig(),
                                     seed_band=seed_band)
    rows = []
    for _, plan in verified_of_kind(saved_verifications(args.model), "remove").iterrows():  # Add plans: no step
        run_dir = args.model.parent / plan["run"]
        removed = torch.tensor(read_config(run_dir)["edit"]["removed"], dtype=torch.long)
        step = absolute_newton_step(base, removed, tolerance=PREDICTION_TOLERANCE, hvp=analysis.absolute_hvp)

        def change_at(c: float, step=step) -> np.ndarray:
            after = group_bias(entity_embeddings=base.entity_embeddings + c * step[0],
                               relation_embeddings=base.relation_embeddings + c * step[1], groups=groups)
            return after.double().numpy() - before

        run = load_model(run_dir)
        actual = group_bias(entity_embeddings=run.entity_embeddings[:base.n_entities],
                            relation_embeddings=run.relation_embeddings, groups=groups).double().numpy() - before
        scaled, full = change_at(float(plan["step_scale"])), change_at(1.0)
        bounded = np.isfinite(bands)
        bounded[groups.index(plan["occupation"])] = False
        b = bands[bounded]
        rows.append(_report({"plan": plan["run"], "name": plan["name"], "k": int(plan["k"]),
                             "step_scale": float(plan["step_scale"]), "bounded": int(bounded.sum()),
                             "outside_predicted_scaled": int((np.abs(scaled[bounded]) > b).sum()),
                             **agreement(full[bounded], actual[bounded], b)}))
    frame = pd.DataFrame(rows)
    print(f"{len(frame)} plans (bands: {source}): beyond their band, predicted at the plan's scale "
          f"{frame['outside_predicted_scaled'].sum()}, at scale 1 {frame['outside_predicted_unscaled'].sum()}, "
          f"retrained {frame['outside_retrained'].sum()} (of {frame['bounded'].sum()})", flush=True)
    if args.add_runs:
        added = pd.DataFrame(add_rows(analysis, args.model, bands=bands, before=before))
        print(f"{len(added)} Add runs: beyond their band, predicted {added['outside_predicted_unscaled'].sum()}, "
              f"retrained {added['outside_retrained'].sum()} (of {added['bounded'].sum()})", flush=True)
        frame = pd.concat([frame.assign(edit="remove"), added], ignore_index=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(args.out, index=False)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
