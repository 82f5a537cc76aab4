"""How loose may the prediction's conjugate-gradient solve be (issue 25's cost: <= 10 s a prediction on one thread)?

For every set of the what-if bench (whatif_accuracy.py's chosen occupations, its top and bottom sets at each share
of the triples that move B_gr), the Newton-step prediction as the lab makes it
(:func:`kgbias_core.influence.prediction.predict_removal`'s arguments) is solved at each ``--tolerances`` (CG's
relative residual): the first, the smallest, is the reference. Each row: the |H| products the solve used, its
seconds (one thread; the analysis's |H| memo built before any of them, as the lab's first prediction builds it once;
before 2026-12-07 a pseudo-Huber or L1 model's |H| was built in each, as the lab then built it per prediction: the
results of that date's runs include it), the point,
its deviation from the reference in units of the reference, and the band's half-width in the same units, so the
deviation reads against the interval it hides in. No retrain: seconds on squared L2, minutes on pseudo-Huber.

    nice python experiments/whatif_accuracy/cg_tolerance.py --model MODEL --runs OUT.csv \
        [--occupations 8] [--sets 2,16] [--tolerances 1e-6,1e-3,1e-2,3e-2,1e-1] [--threads 1]

A rerun skips the rows ``--runs`` holds already (resumable); the summary (per tolerance: the largest and median
deviation, median and largest seconds and products) prints at the end and to ``--summary``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import pandas as pd
import torch
from whatif_accuracy import chosen_occupations

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.commands.common import append_row, write_text
from kgbias_core.embeddings.store import load_model
from kgbias_core.influence.prediction import CG_ITERATIONS, newton_removal_prediction
from kgbias_core.influence.retraining_check import removal_set


def counting(hvp):
    """``hvp`` that counts its products (the solve's unit of work) in ``.calls``, with the memo's attributes."""
    def counted(vector):
        counted.calls += 1
        return hvp(vector)

    counted.calls = 0
    counted.diagonal = hvp.diagonal
    return counted


def summary_frame(runs: pd.DataFrame) -> pd.DataFrame:
    """Per model and tolerance: deviation from the reference (largest, median; in units of the reference point),
    the narrowest band half-width in the same units, seconds and products (median, largest)."""
    rows = []
    for (model, tolerance), part in runs.groupby(["model", "tolerance"], sort=True):
        rows.append({"model": model, "tolerance": tolerance, "sets": len(part),
                     "max_deviation": part["deviation"].max(), "median_deviation": part["deviation"].median(),
                     "min_half_width": part["half_width"].min(),
                     "median_s": part["seconds"].median(), "max_s": part["seconds"].max(),
                     "median_products": part["products"].median(), "max_products": part["products"].max()})
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a stored model")
    parser.add_argument("--runs", required=True, type=Path, help="CSV the rows are appended to (resumed from)")
    parser.add_argument("--summary", type=Path, help="CSV of the summary, written at the end")
    parser.add_argument("--occupations", type=int, default=8)
    parser.add_argument("--sets", default="2,16", help="removal sizes in percent of the moving triples")
    parser.add_argument("--kinds", default="top,bottom")
    parser.add_argument("--tolerances", default="1e-6,1e-3,1e-2,3e-2,1e-1", help="the first is the reference")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    tolerances = [float(t) for t in args.tolerances.split(",")]
    if tolerances[0] != min(tolerances):
        parser.error("--tolerances: the first is the reference, the smallest")
    print(f"torch threads {args.threads}; load average {os.getloadavg()[0]:.2f} at start", flush=True)
    model = load_model(args.model)
    name = Path(args.model).name
    analysis = ModelAnalysis(model)
    groups = analysis.groups
    active = analysis.active_terms
    started = time.perf_counter()
    memo = analysis.absolute_hvp  # built once, as the lab's first prediction of a model builds it
    print(f"|H| memo built in {time.perf_counter() - started:.1f} s", flush=True)
    done = pd.read_csv(args.runs) if args.runs.exists() else None
    seen = set() if done is None else set(zip(done["model"], done["occupation"], done["kind"], done["share"],
                                              done["tolerance"], strict=True))
    for index in chosen_occupations(groups, args.occupations):
        label = groups.labels[index]
        influence = analysis.influence(label)
        moving = int((influence != 0).sum())
        for kind in args.kinds.split(","):
            for share in (int(s) for s in args.sets.split(",")):
                if all((name, label, kind, share, t) in seen for t in tolerances):
                    continue
                k = max(1, moving * share // 100)
                removed = removal_set(influence, kind=kind, k=k)
                reference = None
                for tolerance in tolerances:
                    t = time.perf_counter()
                    hvp = counting(memo)
                    p = newton_removal_prediction(model, removed=removed, groups=groups, occupation_index=index,
                                                  negatives=None, tolerance=tolerance, active=active, hvp=hvp)
                    seconds = time.perf_counter() - t
                    reference = p.point if reference is None else reference
                    if (name, label, kind, share, tolerance) in seen:
                        continue
                    row = {"model": name, "occupation": label, "name": groups.names[index],
                           "men": int(groups.n_male[index]), "women": int(groups.n_female[index]), "kind": kind,
                           "share": share, "k": k, "tolerance": tolerance, "products": hvp.calls,
                           "hit_limit": hvp.calls >= CG_ITERATIONS, "seconds": seconds, "point": p.point,
                           "reference": reference, "deviation": abs(p.point - reference) / abs(reference),
                           "half_width": (p.high - p.low) / 2 / abs(reference)}
                    append_row(row, args.runs)
                    print(f"{groups.names[index][:16]:16s} {kind:6s} {share:2d}% k={k:4d} tol {tolerance:.0e}: "
                          f"{p.point:+.6f} ({row['deviation']:.1e} of it; band +-{row['half_width']:.2f}) "
                          f"{hvp.calls:3d} products {seconds:6.2f} s", flush=True)
    summary = summary_frame(pd.read_csv(args.runs))
    print(summary.to_string(index=False), flush=True)
    if args.summary:
        write_text(summary.to_csv(index=False), str(args.summary))
    print(f"load average {os.getloadavg()[0]:.2f} at the end", flush=True)


if __name__ == "__main__":
    main()
