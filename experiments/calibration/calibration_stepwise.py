"""The calibration of ``kgbias calibrate``, one masked retrain at a time, resumable (issue 13, FB13).

Same occupations, removal sets and fit as :func:`kgbias_core.tasks.calibration.calibrate`, but
every retrain's row is appended to ``--runs`` as soon as it is done, and a rerun skips the rows
already there. On FB13 a retrain takes 10-16 min on this 2-core CPU, so the 13 retrains of a
calibration outlast a working session; this script lets them be spread over several.

    python experiments/calibration/calibration_stepwise.py --model cached_models/fb13-transe \
        --runs experiments/calibration/out/fb13_calibration.csv \
        [--threads 1] [--store]

Prints each run, then (once all 13 rows are in) the fit, the leave-one-occupation-out table and,
with ``--store``, stores the calibration in the model as ``kgbias calibrate`` does.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import pandas as pd
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.commands.common import append_row
from kgbias_core.embeddings.store import load_model
from kgbias_core.influence.calibration import (
    CALIBRATION_OCCUPATIONS,
    RUN_COLUMNS,
    calibration_occupations,
    fit_calibration,
    leave_one_out,
)
from kgbias_core.influence.retraining_check import masked_retrain_bias, removal_set


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--runs", required=True, type=Path, help="CSV the runs are appended to (resumed from)")
    parser.add_argument("--occupations", type=int, default=CALIBRATION_OCCUPATIONS)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--store", action="store_true", help="store the fitted calibration in the model")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch threads {args.threads}; load average {os.getloadavg()[0]:.2f} at start", flush=True)

    model = load_model(args.model)
    analysis = ModelAnalysis(model)
    groups = analysis.groups
    chosen = calibration_occupations(groups, analysis.group_bias(), n=args.occupations)
    base_file = args.runs.with_suffix(".base.json")
    args.runs.parent.mkdir(parents=True, exist_ok=True)
    if base_file.exists():
        base = json.loads(base_file.read_text())
    else:
        started = time.perf_counter()
        bias = masked_retrain_bias(model, removed=None, groups=groups)
        base = {groups.labels[i]: float(bias[i]) for i in chosen}
        base_file.write_text(json.dumps(base, indent=1))
        print(f"base retrain {time.perf_counter() - started:.0f} s", flush=True)
    done = pd.read_csv(args.runs) if args.runs.exists() else pd.DataFrame(columns=list(RUN_COLUMNS))
    seen = set(zip(done["occupation"], done["kind"], strict=True))
    for index in chosen:
        label = groups.labels[index]
        influence = analysis.influence(label)
        size = max(5, int(0.01 * int((influence != 0).sum())))
        for kind in ("top", "bottom"):
            if (label, kind) in seen:
                continue
            started = time.perf_counter()
            removed = removal_set(influence, kind=kind, k=size)
            after = masked_retrain_bias(model, removed=removed, groups=groups)
            row = {"occupation": label, "name": groups.names[index], "kind": kind, "k": size,
                   "predicted": float(influence[removed].sum()), "actual": float(after[index]) - base[label]}
            append_row({column: row[column] for column in RUN_COLUMNS}, args.runs)
            print(f"{row['name']} {kind}-{size}: predicted {row['predicted']:+.4f} actual {row['actual']:+.4f} "
                  f"({time.perf_counter() - started:.0f} s, load {os.getloadavg()[0]:.2f})", flush=True)
    runs = pd.read_csv(args.runs)
    calibration = fit_calibration(runs)
    print(f"scale {calibration.scale:.3f}, range {calibration.low:.3f}-{calibration.high:.3f}")
    held_out = leave_one_out(runs)
    held_out["n_male"] = [int(groups.n_male[groups.labels.index(o)]) for o in held_out["occupation"]]
    held_out["n_female"] = [int(groups.n_female[groups.labels.index(o)]) for o in held_out["occupation"]]
    held_out["group_bias"] = [float(analysis.group_bias()[groups.labels.index(o)]) for o in held_out["occupation"]]
    print(held_out.to_string())
    print(f"leave-one-occupation-out: {int(held_out['inside'].sum())} of {len(held_out)} inside")
    held_out.to_csv(args.runs.with_suffix(".loo.csv"), index=False)
    if args.store:
        from kgbias_core.tasks import store_calibration

        store_calibration(args.model, calibration, runs)
        print(f"stored in {args.model}")


if __name__ == "__main__":
    main()
