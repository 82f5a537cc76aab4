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
        --out experiments/plan_verification/results/fb15k237_k8_collateral_check.csv
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
from kgbias_core.influence.prediction import PREDICTION_TOLERANCE, absolute_newton_step
from kgbias_core.measures.group_bias import group_bias
from kgbias_core.tasks import saved_noise_band
from kgbias_core.whatif.plan import PlanConfig, collateral_bands
from kgbias_core.whatif.step_ratio import saved_verifications, verified_of_kind


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--bands", choices=("noise", "seed"), default="noise")
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
        rows.append({
            "plan": plan["run"], "name": plan["name"], "k": int(plan["k"]), "step_scale": float(plan["step_scale"]),
            "bounded": int(bounded.sum()),
            "outside_predicted_scaled": int((np.abs(scaled[bounded]) > b).sum()),
            "outside_predicted_unscaled": int((np.abs(full[bounded]) > b).sum()),
            "outside_retrained": int((np.abs(actual[bounded]) > b).sum()),
            "r_unscaled_retrained": float(np.corrcoef(full[bounded], actual[bounded])[0, 1]),
            "median_ratio_retrained_unscaled": float(np.median(np.abs(actual[bounded])
                                                               / np.maximum(np.abs(full[bounded]), 1e-12))),
            "median_abs_retrained": float(np.median(np.abs(actual[bounded]))), "median_band": float(np.median(b)),
        })
        print(", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in rows[-1].items()),
              flush=True)
    frame = pd.DataFrame(rows)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(args.out, index=False)
    print(f"{len(frame)} plans (bands: {source}): beyond their band, predicted at the plan's scale "
          f"{frame['outside_predicted_scaled'].sum()}, at scale 1 {frame['outside_predicted_unscaled'].sum()}, "
          f"retrained {frame['outside_retrained'].sum()} (of {frame['bounded'].sum()}); load average at the end "
          f"{os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
