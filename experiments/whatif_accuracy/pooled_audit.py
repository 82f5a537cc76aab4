"""Several audit sets in one retrain (issue 25): does a scale pooled over occupations hold where one set's does not?

The model's audit (``kgbias_core.tasks.prediction_audit``) retrains one edit, the top 16% of the moving triples of
one occupation, and the step's and the refined prediction's scales are that one set's retrained / predicted. On
FB13 with eight negatives that set's refined ratio (1.32) lies outside the held-out sets' (1.07-1.14), and the lab's
band misses half of them. A masked retrain gives B_gr of every occupation at once, so one retrain can audit several
occupations: remove the union of their top-16% sets, and compare each one's retrained change with its predictions of
that same union edit (the step and the refined prediction, unscaled). The cost stays one retrain.

    python experiments/whatif_accuracy/pooled_audit.py --model DIR --occupations 4 \\
        --exclude results/local_refit_sampled_X.csv .. --out results/pooled_audit_X.csv [--threads 1]
    python experiments/whatif_accuracy/pooled_audit.py --judge results/pooled_audit_X.csv \\
        --rows results/local_refit_sampled_X.csv .. --out results/pooled_audit_X_judged.csv

The first form picks ``--first`` (default: the model's audit occupation) and ``--occupations`` - 1 more
with 5 of each gender, spread over size, none of ``--exclude``'s nor of those the bench chooses (``--bench N``), so that
held-out sets stay held out, and retrains the union once (one row per occupation). ``--judge`` scales the held-out sets
of ``--rows`` (local_refit.py outputs) by each scale and judges them with the lab's bands: the single audit set's
ratio (today), the pooled audit's median ratio, and the audit occupation's own ratio within the pooled retrain.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import band_fit  # noqa: I001  (beside this file)
import numpy as np
import pandas as pd
import torch
from local_refit import lab_bands, scaled_rows
from whatif_accuracy import chosen_occupations

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.commands.common import write_text
from kgbias_core.embeddings.store import load_model
from kgbias_core.influence.prediction import predict_removal
from kgbias_core.influence.refit_prediction import refit_change
from kgbias_core.influence.retraining_check import masked_retrain_bias
from kgbias_core.tasks.prediction_audit import audit_occupation, audit_set

#: The other audited occupations have at least this many persons of each gender.
MIN_GROUP = 5
#: The estimators judged: the step and the refined prediction, under their lab names.
ESTIMATORS = {"step": "newton", "refined": "newton_refit_read"}


def pooled_occupations(analysis: ModelAnalysis, n: int, exclude: set[str], first: str | None = None) -> list[str]:
    """``first`` (default: the audit occupation), then ``n`` - 1 others with at least :data:`MIN_GROUP` of each
    gender, spread over size (the smallest and the largest eligible among them), none in ``exclude`` (labels or
    names)."""
    groups = analysis.groups
    first = first or audit_occupation(analysis)
    smaller = torch.minimum(groups.n_male, groups.n_female)
    size = groups.n_male + groups.n_female
    eligible = sorted((i for i in range(len(groups.labels))
                       if int(smaller[i]) >= MIN_GROUP and groups.labels[i] != first
                       and groups.labels[i] not in exclude and groups.names[i] not in exclude),
                      key=lambda i: (int(size[i]), i))
    if n <= 1 or not eligible:
        return [first]
    picks = np.linspace(0, len(eligible) - 1, min(n - 1, len(eligible))).round().astype(int)
    return [first] + [groups.labels[eligible[i]] for i in sorted(set(picks.tolist()))]


def pooled_audit(analysis: ModelAnalysis, occupations: list[str]) -> pd.DataFrame:
    """One retrain without the union of ``occupations``' top :data:`AUDIT_SHARE` sets; per occupation its own set's
    size, the step and the refined prediction of the union edit (unscaled) and the retrained change."""
    groups = analysis.groups
    own = {label: audit_set(analysis, label)[2] for label in occupations}
    union = torch.unique(torch.cat(list(own.values())))
    predicted = {}
    for label in occupations:
        start = time.perf_counter()
        step = predict_removal(analysis, label, union).point
        refined = refit_change(analysis, label, union)
        predicted[label] = (step, refined, time.perf_counter() - start)
        print(f"{label}: step {step:+.3f} refined {refined:+.3f} ({predicted[label][2]:.1f} s)", flush=True)
    start = time.perf_counter()
    after = masked_retrain_bias(analysis.model, removed=union, groups=groups)
    retrain_s = time.perf_counter() - start
    rows = []
    for label in occupations:
        index = groups.index(label)
        step, refined, seconds = predicted[label]
        retrained = float(after[index]) - float(analysis.group_bias(label))
        rows.append({"occupation": label, "name": groups.names[index], "men": int(groups.n_male[index]),
                     "women": int(groups.n_female[index]), "k": int(own[label].numel()), "union_k": int(union.numel()),
                     "step": step, "refined": refined, "retrained": retrained, "step_ratio": retrained / step,
                     "refined_ratio": retrained / refined, "predict_s": seconds, "retrain_s": retrain_s})
    return pd.DataFrame(rows)


def judge(pooled: pd.DataFrame, rows: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """The held-out targeted sets of ``rows`` (local_refit.py's, not the audited occupation's, not the pooled
    audit's) under each estimator's lab band, widened by their noise floors in ``runs`` (whatif_accuracy.py's; 0
    where none), scaled three ways: the single audit set's ratio (today), the pooled audit's median ratio, and the
    ratio of the single audit's occupation within the pooled retrain."""
    out = []
    for short, estimator in ESTIMATORS.items():
        ratios = pooled[f"{short}_ratio"]
        floored, single = scaled_rows(rows, runs, estimator)
        held = band_fit.targeted_rows(floored[~floored["occupation"].isin(pooled["occupation"])])
        scales = {"single audit set": single, "pooled median": float(ratios.median()),
                  "audit occupation, pooled retrain": float(ratios.iloc[0])}
        for scale_name, scale in scales.items():
            scaled = held.assign(scaled=held[estimator] * scale)
            covered, width = band_fit.judged(scaled, *lab_bands()[estimator])
            out.append({"estimator": short, "scale": scale_name, "ratio": scale, "sets": len(scaled),
                        "coverage": float(covered.mean()), "half_width": float(np.median(width)),
                        "pooled_ratios": "; ".join(f"{r:.3f}" for r in ratios)})
    return pd.DataFrame(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a stored model (the first form)")
    parser.add_argument("--occupations", type=int, default=4)
    parser.add_argument("--first", help="the first occupation's label (default: the model's audit occupation, by "
                                         "today's rule; the FB13 run of 2026-11-29 was made with politician)")
    parser.add_argument("--exclude", nargs="*", default=[], help="local_refit.py outputs: their occupations held out")
    parser.add_argument("--bench", type=int, default=8,
                        help="leave out the occupations whatif_accuracy.py --occupations N chooses (0: none)")
    parser.add_argument("--judge", help="a pooled audit's rows (the second form)")
    parser.add_argument("--rows", nargs="*", default=[], help="with --judge: local_refit.py outputs, the held-out sets")
    parser.add_argument("--runs", nargs="*", default=[], help="with --judge: whatif_accuracy.py runs (noise floors)")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.judge:
        rows = pd.concat([pd.read_csv(p) for p in args.rows], ignore_index=True)
        runs = (pd.concat([pd.read_csv(p) for p in args.runs], ignore_index=True) if args.runs
                else pd.DataFrame(columns=["occupation", "kind", "share"]))
        frame = judge(pd.read_csv(args.judge), rows.drop_duplicates(["occupation", "kind", "share"]), runs)
    else:
        exclude = set()
        for path in args.exclude:
            held = pd.read_csv(path)
            exclude |= set(held.loc[~held["in_audit"].astype(bool), "occupation"]) | set(
                held.loc[~held["in_audit"].astype(bool), "name"])
        analysis = ModelAnalysis(load_model(args.model))
        if args.bench:
            exclude |= {analysis.groups.labels[i] for i in chosen_occupations(analysis.groups, args.bench)}
        occupations = pooled_occupations(analysis, args.occupations, exclude, args.first)
        print(f"torch threads {args.threads}; load average {os.getloadavg()[0]:.2f} at start; "
              f"occupations {occupations}", flush=True)
        frame = pooled_audit(analysis, occupations)
    print(frame.round(4).to_string(index=False))
    write_text(frame.to_csv(index=False, float_format="%.4f"), str(args.out))


if __name__ == "__main__":
    main()
