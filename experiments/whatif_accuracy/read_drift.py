"""How far the rows B_gr reads move when refitted with nothing removed (issue 25): the refined prediction's guard.

The refined prediction (kgbias_core.influence.refit_prediction) reads its change between two refits of the rows
B_gr of an occupation reads: without the edit and with it. Where a model's rows are at their optimum the first
barely moves them; where they are not (a model trained too briefly) it moves them far, and the refined prediction
spreads (local_refit_read_synthetic_k8.csv against local_refit_read_synthetic_k8_e100.csv). This script measures
that move (``read_drift``: mean ||refitted - trained|| / mean ||trained||) and the unedited refit's own change of
B_gr, per occupation, on the synthetic graph of the tests (``--seed``) trained with eight negatives and
``--distance`` for each of ``--epochs``, and on a stored ``--model`` for the occupations of ``--rows``
(local_refit.py outputs).

    python experiments/whatif_accuracy/read_drift.py --epochs 25 50 100 [--seed 7] [--distance l2] \\
        [--model DIR --rows R1.csv ..] --out results/read_drift.csv
"""

from __future__ import annotations

import argparse
import os
from dataclasses import replace
from pathlib import Path

import pandas as pd
import torch
from whatif_accuracy import SYNTHETIC, SYNTHETIC_TRAINING, chosen_occupations  # noqa: I001  (beside this file)

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.commands.common import write_text
from kgbias_core.data.synthetic import generate_people_graph
from kgbias_core.embeddings.store import load_model
from kgbias_core.embeddings.training import train_model
from kgbias_core.influence.refit_prediction import read_drift
from kgbias_core.measures.group_bias import group_bias


def drift_rows(analysis: ModelAnalysis, occupations: list[str], *, model: str) -> list[dict]:
    """One row per occupation: the read rows' move (read_drift) and the unedited refit's change of B_gr."""
    m, groups = analysis.model, analysis.groups
    before = group_bias(entity_embeddings=m.entity_embeddings, relation_embeddings=m.relation_embeddings,
                        groups=groups)
    out = []
    for label in occupations:
        index = groups.index(label)
        rows, refitted = analysis.unedited_read_refit(label)
        moved = m.entity_embeddings.index_put((rows,), refitted)
        after = group_bias(entity_embeddings=moved, relation_embeddings=m.relation_embeddings, groups=groups)
        out.append({"model": model, "occupation": label, "name": groups.names[index],
                    "men": int(groups.n_male[index]), "women": int(groups.n_female[index]),
                    "read_drift": read_drift(analysis, label), "bias_drift": float(after[index] - before[index])})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, nargs="*", default=[], help="synthetic graph trained this long")
    parser.add_argument("--seed", type=int, default=SYNTHETIC.seed, help="the synthetic graph's seed")
    parser.add_argument("--distance", default=SYNTHETIC_TRAINING.distance, help="the synthetic graph's distance")
    parser.add_argument("--model", help="a stored model")
    parser.add_argument("--rows", nargs="*", default=[], help="with --model: local_refit.py outputs (occupations)")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch threads {args.threads}; load average {os.getloadavg()[0]:.2f} at start", flush=True)
    rows = []
    graph = generate_people_graph(replace(SYNTHETIC, seed=args.seed)) if args.epochs else None
    for epochs in args.epochs:
        training = replace(SYNTHETIC_TRAINING, negatives_per_triple=8, epochs=epochs, distance=args.distance)
        suffix = "" if (args.seed, args.distance) == (SYNTHETIC.seed, SYNTHETIC_TRAINING.distance) else \
            f"-s{args.seed}-{args.distance}"
        model = train_model(graph, training, name=f"synthetic-k8-e{epochs}{suffix}", device=torch.device("cpu"))
        analysis = ModelAnalysis(model)
        labels = [analysis.groups.labels[i] for i in chosen_occupations(analysis.groups, 8)]
        rows += drift_rows(analysis, labels, model=model.name)
    if args.model:
        analysis = ModelAnalysis(load_model(args.model))
        labels = list(dict.fromkeys(pd.concat([pd.read_csv(p) for p in args.rows])["occupation"]))
        rows += drift_rows(analysis, labels, model=Path(args.model).name)
    frame = pd.DataFrame(rows)
    print(frame.round(4).to_string(index=False))
    write_text(frame.to_csv(index=False, float_format="%.6f"), str(args.out))


if __name__ == "__main__":
    main()
