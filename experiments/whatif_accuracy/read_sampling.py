"""The read-rows refit with a sample of the persons, against the same refit of all of them (issue 25: its cost).

:func:`~kgbias_core.influence.local_refit.read_refit_change` refits at most ``max_persons`` persons of each gender
and reads their mean as a control variate on the Newton step. This measures what the sample costs in accuracy
against the refit of every person (the rows B_gr reads alone, as the core's default), on the top and bottom sets
of an occupation's moving triples, for several caps and seeds. No retrain: the reference is the full refit.

    python experiments/whatif_accuracy/read_sampling.py --model PATH --occupations Actor Screenwriter .. \\
        --out OUT.csv [--shares 16] [--caps 256 128] [--seeds 3]

Every row is written when it is done (resumable: a rerun skips the rows in OUT).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import pandas as pd
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.commands.common import append_row
from kgbias_core.embeddings.store import load_model
from kgbias_core.influence.local_refit import read_refit_change
from kgbias_core.influence.prediction import _bias, _moved, absolute_newton_step
from kgbias_core.influence.retraining_check import removal_set


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--occupations", nargs="+", required=True, help="labels or names")
    parser.add_argument("--shares", nargs="+", type=int, default=[16], help="%% of the moving triples per set")
    parser.add_argument("--caps", nargs="+", type=int, default=[256, 128], help="persons per gender refitted")
    parser.add_argument("--seeds", type=int, default=3, help="draws of the first cap (the others: one)")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch threads {args.threads}; load average {os.getloadavg()[0]:.2f} at start", flush=True)
    key = ["name", "kind", "share", "cap", "seed"]
    done = pd.read_csv(args.out) if args.out.exists() else pd.DataFrame(columns=key)
    seen = set(zip(*(done[c] for c in key), strict=True))
    model = load_model(args.model)
    analysis = ModelAnalysis(model)
    groups = analysis.groups
    draws = [(0, 0)] + [(args.caps[0], seed) for seed in range(args.seeds)] + [(cap, 0) for cap in args.caps[1:]]
    for occupation in args.occupations:
        index = groups.index(occupation)
        influence = analysis.influence(groups.labels[index])
        moving = int((influence != 0).sum())
        for share in args.shares:
            for kind in ("top", "bottom"):
                if all((groups.names[index], kind, share, cap, seed) in seen for cap, seed in draws):
                    continue
                k = max(1, moving * share // 100)
                removed = removal_set(influence, kind=kind, k=k)
                t = time.perf_counter()
                step = absolute_newton_step(model, removed, tolerance=1e-3, active=analysis.active_terms,
                                            hvp=analysis.absolute_hvp)
                step_s = time.perf_counter() - t
                newton = _bias(_moved(model, step), groups, index) - _bias(model, groups, index)
                full = None
                for cap, seed in draws:
                    t = time.perf_counter()
                    read = read_refit_change(entities=model.entity_embeddings, relations=model.relation_embeddings,
                                             step=step, triples=model.triples, negatives=model.frozen_negatives,
                                             removed=removed, groups=groups, occupation_index=index,
                                             margin=model.config.margin, l2=model.config.l2,
                                             distance=model.config.distance, max_persons=cap or None, seed=seed)
                    full = read.change if cap == 0 else full
                    row = {"name": groups.names[index], "men": int(groups.n_male[index]),
                           "women": int(groups.n_female[index]), "kind": kind, "share": share, "k": k,
                           "newton": newton, "newton_s": step_s, "cap": cap, "seed": seed, "change": read.change,
                           "relative": read.change / full, "rows": read.rows, "persons_refit": read.sampled,
                           "seconds": time.perf_counter() - t}
                    if (row["name"], kind, share, cap, seed) not in seen:
                        append_row(row, args.out)
                    print(f"{row['name']} {kind} {share}% cap {cap or 'all'} seed {seed}: {read.change:+.4f} "
                          f"({row['relative']:.3f} of all; {read.rows} rows, {row['seconds']:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
