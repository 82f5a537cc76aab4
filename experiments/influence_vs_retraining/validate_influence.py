"""Influence vs masked retraining on FB15k-237 (Du §4.2; METHODS §2, §9). Minutes per occupation.

    KGBIAS_DATA_DIR=../shared/data python experiments/influence_vs_retraining/validate_influence.py \
        [--model DIR] [--ks 50 200 800] [--occupations /m/02hrh1q /m/0d1pc /m/0dxtg] [--calibrate]

Prints, per occupation, every removal set (top/bottom/random k) with predicted and actual change of
B_gr, then Pearson r, the random-removal noise, the scale actual/predicted and the sign agreement.
The stored calibration is made by ``kgbias calibrate`` (:mod:`kgbias_core.influence.calibration`).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd
import torch

from kgbias_core.analysis import ModelAnalysis  # noqa: E402
from kgbias_core.embeddings.store import load_model  # noqa: E402
from kgbias_core.influence.retraining_check import (  # noqa: E402
    REMOVAL_KINDS,
    default_ks,
    influence_accuracy,
    masked_retrain_bias,
    summarize_accuracy,
)
from kgbias_core.tables import entity_name  # noqa: E402

# Actor, Model, Screenwriter: the occupations of the feasibility study (METHODS §2).
DEFAULT_OCCUPATIONS = ("/m/02hrh1q", "/m/0d1pc", "/m/0dxtg")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="cached_models/fb15k237-transe")
    parser.add_argument("--occupations", nargs="+", default=list(DEFAULT_OCCUPATIONS))
    parser.add_argument("--ks", nargs="+", type=int, default=None,
                        help="removal sizes; default 2%%, 8%% and 32%% of the triples that move the occupation's B_gr")
    parser.add_argument("--kinds", nargs="+", choices=REMOVAL_KINDS, default=list(REMOVAL_KINDS))
    parser.add_argument("--threads", type=int, default=1, help="torch threads, pinned (the machine is shared)")
    parser.add_argument("--base", choices=("retrain", "stored"), default="retrain",
                        help="B_gr before removal: an unedited masked retrain, or the stored model's (saves one "
                             "retrain; the unedited retrain reproduces it, docs/methods.md)")
    parser.add_argument("--out", default="experiments/influence_vs_retraining/out/influence_accuracy.csv")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    model = load_model(args.model)
    analysis = ModelAnalysis(model)
    print(f"model {args.model}: {model.config}", flush=True)
    start = time.perf_counter()
    if args.base == "stored":
        base = analysis.group_bias()
        print("base B_gr: the stored model's", flush=True)
    else:
        base = masked_retrain_bias(model, removed=None, groups=analysis.groups)
        drift = max(abs(float(base[analysis.groups.index(o)] - analysis.group_bias(o))) for o in args.occupations)
        print(f"unedited retrain: {time.perf_counter() - start:.0f}s, max |B_gr - stored| = {drift:.2e}", flush=True)

    out = Path(args.out)
    tables, summaries = [], []
    for occupation in args.occupations:
        index = analysis.groups.index(occupation)
        name = entity_name(analysis, model.entity_id(occupation))
        influence = analysis.influence(occupation)
        ks = args.ks or default_ks(int((influence != 0).sum()))
        runs = influence_accuracy(
            model, influence=influence, occupation_index=index, groups=analysis.groups,
            ks=ks, kinds=args.kinds, base_bias=float(base[index]),
            on_run=lambda kind, k, p, a, n=name: print(f"  {n:14s} {kind:6s} k={k:5d} predicted {p:+.4f} actual "
                                                       f"{a:+.4f}  ({time.perf_counter() - start:.0f}s)", flush=True),
        )
        runs.insert(0, "occupation", occupation)
        runs.insert(1, "name", name)
        tables.append(runs)
        out.parent.mkdir(parents=True, exist_ok=True)
        pd.concat(tables).to_csv(out, index=False)  # after each occupation: hours of retraining survive a kill
        s = summarize_accuracy(runs)
        summaries.append({"occupation": occupation, "name": name, "B_gr": float(base[index]), "r": s.r,
                          "p_value": s.p_value, "noise": s.noise, "scale": s.scale,
                          "sign_agreement": s.sign_agreement})
        print(f"{name}: r = {s.r:.4f} (p = {s.p_value:.1e}), random noise {s.noise:.4f}, "
              f"scale actual/predicted {s.scale:.3f}, signs {s.sign_agreement:.0%}", flush=True)
    pd.concat(tables).to_csv(out, index=False)
    summary = pd.DataFrame(summaries)
    summary.to_csv(out.with_name(out.stem + "_summary.csv"), index=False)
    print(summary.to_string(index=False))
    print(f"total {time.perf_counter() - start:.0f}s")


if __name__ == "__main__":
    main()
