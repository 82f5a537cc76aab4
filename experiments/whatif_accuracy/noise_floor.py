"""The noise floor of the what-if interval (issue 25): coverage of the bench's sets with and without it.

The Newton interval [p / f, p * f] is relative to the prediction p, so a set whose change is near 0 (a random
set) gets an interval of width ~0, and its retrained change (small, but not 0) falls outside. The floor widens
the interval by the occupation's noise band: B_gr's spread (max - min) over the base and 3 retrains of the
unedited graph under other seeds (:func:`kgbias_core.whatif.runs.noise_band`), as the lab, ``debias`` and the
report now do. This script re-reads the rows of ``whatif_accuracy.py`` (their predictions and masked retrains),
retrains the same synthetic graph's noise band, and prints the coverage of each kind of set both ways.

    nice python experiments/whatif_accuracy/noise_floor.py \
        --runs experiments/whatif_accuracy/results/synthetic_whatif.csv --seed 7 [--threads 1]

With ``--negatives 8 --floors OUT.csv`` (and that run's ``--epochs``, ``--distance``) it reads the rows of
``local_refit.py`` on the graph trained with eight negatives (no interval of their own) and writes each set's
floor (occupation, kind, share, floor), which ``local_refit.py --bands --runs`` adds to the bands as the lab adds it.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import replace
from pathlib import Path

import pandas as pd
import torch
from whatif_accuracy import SYNTHETIC, SYNTHETIC_TRAINING  # noqa: I001  (the bench beside this file)

from kgbias_core.commands.common import write_text
from kgbias_core.data.synthetic import generate_people_graph
from kgbias_core.embeddings.config import DISTANCES
from kgbias_core.embeddings.training import train_model
from kgbias_core.whatif.runs import noise_band


def coverage(runs: pd.DataFrame) -> pd.DataFrame:
    """Per kind of set: sets, coverage of the bare band and of the floored interval, median spread."""
    inside = (runs["low"] <= runs["actual"]) & (runs["actual"] <= runs["high"])
    floored = (runs["low"] - runs["spread"] <= runs["actual"]) & (runs["actual"] <= runs["high"] + runs["spread"])
    frame = runs.assign(inside=inside, floored=floored, targeted=runs["kind"] != "random")
    return frame.groupby("kind").agg(sets=("actual", "size"), bare=("inside", "mean"), floored=("floored", "mean"),
                                     spread=("spread", "median"), abs_actual=("actual", lambda x: x.abs().median()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", required=True, type=Path)
    parser.add_argument("--seed", type=int, default=SYNTHETIC.seed)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--negatives", type=int, default=SYNTHETIC_TRAINING.negatives_per_triple,
                        help="frozen negatives per triple of the synthetic graph's training (local_refit.py's)")
    parser.add_argument("--epochs", type=int, default=SYNTHETIC_TRAINING.epochs,
                        help="epochs of the synthetic graph's training (local_refit.py's --epochs)")
    parser.add_argument("--distance", choices=DISTANCES, default=SYNTHETIC_TRAINING.distance,
                        help="distance of the synthetic graph's training (local_refit.py's --distance)")
    parser.add_argument("--floors", type=Path, help="write each set's floor here (occupation, kind, share, floor)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch threads {args.threads}; load average {os.getloadavg()[0]:.2f} at start")
    graph = generate_people_graph(replace(SYNTHETIC, seed=args.seed))
    training = replace(SYNTHETIC_TRAINING, negatives_per_triple=args.negatives, epochs=args.epochs,
                       distance=args.distance)
    model = train_model(graph, training, name="synthetic-transe", device=torch.device("cpu"))
    band = noise_band(model, seeds=(1, 2, 3))[["occupation", "spread"]]
    runs = pd.read_csv(args.runs).merge(band, on="occupation", how="left")
    if args.floors:  # the sets' floors for local_refit.py --bands (its rows hold no interval to judge here)
        from kgbias_core.analysis import ModelAnalysis
        from kgbias_core.influence.retraining_check import removal_set

        first = runs.iloc[0]  # the same graph as the rows' (seed, negatives, training): the same closed form
        influence = ModelAnalysis(model).influence(first["occupation"])
        raw = float(influence[removal_set(influence, kind=first["kind"], k=int(first["k"]))].sum())
        if abs(raw - float(first["closed_form"])) > 1e-4 * abs(raw):
            raise SystemExit(f"closed form {raw:+.6f}, the rows' {first['closed_form']:+.6f}: not the rows' graph")
        floors = runs[["occupation", "kind", "share"]].assign(floor=runs["spread"])
        write_text(floors.to_csv(index=False, float_format="%.6f"), str(args.floors))
        print(f"wrote {len(floors)} floors to {args.floors}; median {floors['floor'].median():.4f}")
        return
    if "kind" not in runs.columns:  # addition_accuracy.py's rows: Add edits
        runs["kind"] = "add"
    print(coverage(runs).to_string(float_format=lambda x: f"{x:.3f}"))
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
