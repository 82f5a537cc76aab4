"""The refined prediction's points on a stored model, one column per run: how far a change of the refit's arithmetic
moves them (issue 25's refined prediction; docs/results/whatif.md, "The refit's terms expanded around their start").

For eight occupations of the model (its three largest with both genders, Theatre Director, Politician and Model where
they exist, and two of 20+ persons with at most 2 of one gender), IF-REMOVE 50 and 400 and a random 200 (seed 0),
each set's unscaled refined change (:func:`kgbias_core.influence.refit_prediction.refit_change`: the Newton step,
then the rows B_gr reads refitted), written as the column ``--column`` of ``--out`` (rows keyed by occupation, kind
and k; other columns kept). Run it once per version of the code (``PYTHONPATH`` naming a worktree of the other
commit), and with ``--float64`` on the model's float64 copy: the arithmetic's own reference.

    PYTHONPATH=W python experiments/whatif_accuracy/refit_points.py --model DIR --column before --out R.csv
    python experiments/whatif_accuracy/refit_points.py --model DIR --column after --out R.csv [--float64]
"""

from __future__ import annotations

import argparse
import os
from dataclasses import replace
from pathlib import Path

import pandas as pd
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.commands.common import write_text
from kgbias_core.embeddings.store import load_model
from kgbias_core.influence.refit_prediction import refit_change, refit_refusal
from kgbias_core.whatif.edits import make_edit

NAMED = ("Theatre Director", "Politician", "Model")
SETS = (("if", 50), ("if", 400), ("random", 200))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--column", required=True, help="the column this run writes (before, after, float64, ...)")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--float64", action="store_true", help="predict on the model's float64 copy")
    args = parser.parse_args()
    torch.set_num_threads(1)
    model = load_model(args.model)
    if args.float64:
        model = replace(model, weights={key: value.double() for key, value in model.weights.items()})
    analysis = ModelAnalysis(model)
    groups = analysis.groups
    both = ((groups.n_male > 0) & (groups.n_female > 0)).nonzero().squeeze(-1).tolist()
    names = [groups.names[i] for i in sorted(both, key=lambda i: -int(groups.n_male[i] + groups.n_female[i]))[:3]]
    names += [name for name in NAMED if name in groups.names and name not in names]
    names += [groups.names[i] for i in both if min(int(groups.n_male[i]), int(groups.n_female[i])) <= 2
              and int(groups.n_male[i] + groups.n_female[i]) >= 20][:2]
    rows = []
    for name in names:
        label = groups.labels[groups.names.index(name)]
        if refit_refusal(analysis, label):
            continue
        for strategy, k in SETS:
            edit = make_edit(analysis, label, strategy=strategy, k=k)
            point = refit_change(analysis, label, torch.tensor(edit.removed, dtype=torch.long))
            rows.append({"occupation": name, "kind": "top" if strategy == "if" else strategy,
                         "k": len(edit.removed), args.column: point})
            print(rows[-1], flush=True)
    got = pd.DataFrame(rows).set_index(["occupation", "kind", "k"])
    if args.out.exists():
        old = pd.read_csv(args.out).set_index(["occupation", "kind", "k"]).drop(columns=[args.column], errors="ignore")
        got = old.join(got, how="outer")
    write_text(got.reset_index().to_csv(index=False), str(args.out))
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes)")


if __name__ == "__main__":
    main()
