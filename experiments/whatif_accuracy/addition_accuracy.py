"""Add-debiasing predicted against an edited retrain (issue 25): the Newton step for additions.

For each chosen occupation and c, Du's Add (c * | |M| - |F| | dummies of the rarer gender) is predicted by
:func:`kgbias_core.whatif.edits.predict_edit` (the dummies' rows replayed through the training loop with the
trained rows frozen, then one Newton step of the trained rows with |H|)
and measured by two trainings from one seed, one batch order and one initialisation: the graph with the
added triples weighted 0 (the reference, a model of the base graph) and weighted 1 (the edit). They differ
by the added triples only, as a masked retrain differs by the removed ones. B_gr after is over the edited
graph's groups (the dummies counted), as a retrained Add is measured. Rows are appended to ``--runs``.

``--distance`` and ``--epochs`` train the synthetic graph (and every retrain) with another distance or longer; a
distance the lab refuses Add for (:data:`~kgbias_core.influence.prediction.ADD_DISTANCES`) is measured here all the
same, which is how one would earn its place there.

``--summarize [NAME=]RUNS.csv ... --out SUMMARY.csv`` judges runs files as the lab would (:func:`summary_row`).

``--stored BASE RUN...`` predicts Add runs already retrained in a store instead (``kgbias debias --strategy add``
on a real graph: the base model and its retrained edits), against each run's B_gr after minus the base's before.

    nice python experiments/whatif_accuracy/addition_accuracy.py \
        --runs experiments/whatif_accuracy/results/synthetic_add_replay.csv [--seed 7] [--cs 0.25,0.5,1] [--threads 1]
    nice python experiments/whatif_accuracy/addition_accuracy.py --runs .../fb15k237_k8_add.csv \
        --stored STORE/fb15k237-transe STORE/fb15k237-transe--add-actor-...
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from whatif_accuracy import SYNTHETIC, SYNTHETIC_TRAINING, chosen_occupations  # noqa: I001

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.commands.common import append_row, write_text
from kgbias_core.data.synthetic import generate_people_graph
from kgbias_core.embeddings.config import DISTANCES
from kgbias_core.embeddings.store import load_model, read_config
from kgbias_core.embeddings.training import train_model, train_transe
from kgbias_core.influence import prediction
from kgbias_core.influence.prediction import extended_model
from kgbias_core.measures.group_bias import group_bias
from kgbias_core.measures.groups import occupation_groups
from kgbias_core.tasks.prediction_audit import ADD_AUDIT_C, audit_index
from kgbias_core.whatif.edits import add_edit, addition, edit_of_record, predict_edit
from kgbias_core.whatif.step_ratio import ADDITIONS, model_step_ratio, saved_add_audit


def edited_retrains(model, edit):
    """(the masked reference as a model of the base graph, B_gr of the occupation after the edited retrain)."""
    add = addition(model, edit)
    n, n_base = model.triples.shape[0], model.n_entities
    triples = torch.cat([model.triples, add.triples])
    common = {"triples": triples, "negatives": torch.cat([model.frozen_negatives, add.negatives]),
              "n_entities": n_base + len(add.labels), "n_relations": model.n_relations, "config": model.config,
              "n_base_entities": n_base, "device": "cpu"}
    mask = torch.ones(triples.shape[0])
    mask[n:] = 0
    masked, edited = train_transe(weights=mask, **common), train_transe(**common)
    reference = replace(model, weights={"entity_embeddings": masked.entity_embeddings[:n_base],
                                        "relation_embeddings": masked.relation_embeddings})
    after = replace(extended_model(reference, add), weights={"entity_embeddings": edited.entity_embeddings,
                                                             "relation_embeddings": edited.relation_embeddings})
    groups = occupation_groups(after)
    values = group_bias(entity_embeddings=after.entity_embeddings, relation_embeddings=after.relation_embeddings,
                        groups=groups)
    return reference, float(values[groups.index(edit.occupation)])


def record(runs: Path, row: dict, prediction, after_minus_before: float) -> None:
    """Append one edit's row to ``runs`` and print it."""
    runs.parent.mkdir(parents=True, exist_ok=True)
    append_row(row, runs)
    p, actual = prediction, after_minus_before
    inside = "in " if p.low <= actual <= p.high else "OUT"
    print(f"{row['occupation']:14s} {row['men']:3d}/{row['women']:<3d} c={row['c']:<4} +{row['dummies']:3d}: newton "
          f"{p.point:+.4f} [{p.low:+.4f}, {p.high:+.4f}] {inside} actual {actual:+.4f} ({row['seconds']:.2f} s)",
          flush=True)


def synthetic_edits(args) -> None:
    """Retrain each chosen occupation's Add on the synthetic graph (masked reference and edit) and predict it."""
    graph = generate_people_graph(replace(SYNTHETIC, seed=args.seed))
    training = replace(SYNTHETIC_TRAINING, distance=args.distance, epochs=args.epochs)
    model = train_model(graph, training, name="synthetic-transe", device=torch.device("cpu"))
    groups = ModelAnalysis(model).groups
    done = pd.read_csv(args.runs) if args.runs.exists() else None
    seen = set() if done is None else set(zip(done["occupation"], done["c"], strict=True))
    for index in chosen_occupations(groups, args.occupations):
        label = groups.labels[index]
        for c in (float(x) for x in args.cs.split(",")):
            if (label, c) in seen or round(c * abs(int(groups.n_male[index]) - int(groups.n_female[index]))) < 1:
                continue
            edit = add_edit(model, label, c=c)
            reference, after = edited_retrains(model, edit)
            analysis = ModelAnalysis(reference)
            before = float(analysis.group_bias(label))
            started = time.perf_counter()
            p = predict_edit(analysis, edit)
            row = {"occupation": label, "men": int(groups.n_male[index]), "women": int(groups.n_female[index]),
                   "c": c, "dummies": len(edit.added_entities), "newton": p.point, "low": p.low, "high": p.high,
                   "actual": after - before, "seconds": time.perf_counter() - started}
            record(args.runs, row, p, after - before)


def stored_edits(args) -> None:
    """Predict each stored Add run from its base and compare with the run's own B_gr after (its edited groups).

    Where the base has its Add audit (``kgbias prepare``, the lab's button), each run is also predicted as the lab
    predicts it, times the audit's ratio (``scaled``); the audit's own occupation is not held out from that."""
    base = load_model(args.stored[0])
    analysis = ModelAnalysis(base)
    ratio = model_step_ratio(args.stored[0], use=ADDITIONS)
    audit = saved_add_audit(args.stored[0])
    for run_dir in args.stored[1:]:
        run = load_model(run_dir)
        edit = edit_of_record(base, read_config(run_dir)["edit"])
        index = analysis.groups.index(edit.occupation)
        before = float(analysis.group_bias(edit.occupation))
        after = float(ModelAnalysis(run).group_bias(edit.occupation))
        started = time.perf_counter()
        p = predict_edit(analysis, edit)
        c = float(edit.strategy.split("c=")[1].split()[0])
        row = {"occupation": base.entity_names[int(analysis.groups.occupations[index])],
               "men": int(analysis.groups.n_male[index]), "women": int(analysis.groups.n_female[index]), "c": c,
               "dummies": len(edit.added_entities), "newton": p.point, "low": p.low, "high": p.high,
               "actual": after - before, "seconds": time.perf_counter() - started}
        if ratio is not None:
            scaled = predict_edit(analysis, edit, scale=ratio.value)
            row.update(audited=bool(audit.iloc[0]["occupation"] == edit.occupation), scale=ratio.value,
                       scaled=scaled.point, scaled_low=scaled.low, scaled_high=scaled.high)
            inside = "in " if scaled.low <= after - before <= scaled.high else "OUT"
            print(f"  x {ratio.value:.3f} (the Add audit of {audit.iloc[0]['name']}): {scaled.point:+.4f} "
                  f"[{scaled.low:+.4f}, {scaled.high:+.4f}] {inside}", flush=True)
        record(args.runs, row, p, after - before)


def summary_row(runs: pd.DataFrame) -> dict:
    """One Add runs file judged as the lab would judge it: its edits as computed, and the edits other than the
    audit's times the ratio of the audit's own edit (the occupation :func:`audit_index` picks, at
    :data:`ADD_AUDIT_C`; the ratio scales both ends of the band, as a scaled Add prediction's)."""
    sizes = runs.drop_duplicates("occupation")
    audited = sizes["occupation"].iloc[audit_index(torch.tensor(sizes["men"].to_numpy()),
                                                   torch.tensor(sizes["women"].to_numpy()))]
    own = runs[(runs["occupation"] == audited) & (runs["c"] == ADD_AUDIT_C)].iloc[0]
    scale = float(own["actual"] / own["newton"])
    held = runs[runs["occupation"] != audited]
    low = np.minimum(scale * held["low"], scale * held["high"])
    high = np.maximum(scale * held["low"], scale * held["high"])

    def share(mask) -> float:
        return float(np.mean(mask))

    return {"edits": len(runs), "coverage": share((runs["low"] <= runs["actual"]) & (runs["actual"] <= runs["high"])),
            "sign": share(np.sign(runs["newton"]) == np.sign(runs["actual"])),
            "ratio": float((runs["actual"] / runs["newton"]).median()), "audit": audited, "scale": scale,
            "held": len(held), "scaled_coverage": share((low <= held["actual"]) & (held["actual"] <= high)),
            "held_sign": share(np.sign(held["newton"]) == np.sign(held["actual"]))}


def summarize(items: list[str], out: Path) -> None:
    """``--summarize NAME=RUNS.csv ...``: :func:`summary_row` of each runs file, one row per NAME, to ``out``."""
    rows = []
    for item in items:
        name, _, path = item.rpartition("=")
        rows.append({"runs": name or Path(path).stem, **summary_row(pd.read_csv(path))})
    frame = pd.DataFrame(rows)
    print(frame.round(3).to_string(index=False))
    write_text(frame.to_csv(index=False, float_format="%.4f"), str(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, help="the CSV the rows are appended to (resumed from)")
    parser.add_argument("--summarize", nargs="+", metavar="[NAME=]RUNS",
                        help="summarise these runs files (summary_row) into --out; nothing is retrained")
    parser.add_argument("--out", type=Path, help="with --summarize: the summary CSV")
    parser.add_argument("--seed", type=int, default=SYNTHETIC.seed)
    parser.add_argument("--occupations", type=int, default=8)
    parser.add_argument("--cs", default="0.25,0.5,1")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=SYNTHETIC_TRAINING.epochs,
                        help="the synthetic graph's training epochs (the tests' 25; more: rows nearer their optimum)")
    parser.add_argument("--distance", choices=DISTANCES, default="squared_l2",
                        help="the synthetic graph's training distance (the edits' retrains keep it); one the lab "
                             "refuses Add for is measured all the same")
    parser.add_argument("--stored", nargs="+", type=Path, help="a base model's folder, then its retrained Add runs")
    args = parser.parse_args()
    if args.summarize:
        if args.out is None:
            parser.error("--summarize needs --out")
        summarize(args.summarize, args.out)
        return
    if args.runs is None:
        parser.error("--runs is required")
    torch.set_num_threads(args.threads)
    if args.distance not in prediction.ADD_DISTANCES:
        # measuring a distance is how one earns its place in ADD_DISTANCES: the product's refusal is lifted here only
        prediction.ADD_DISTANCES = (*prediction.ADD_DISTANCES, args.distance)
    print(f"torch threads {args.threads}; load average {os.getloadavg()[0]:.2f} at start", flush=True)
    if args.stored:
        stored_edits(args)
    else:
        synthetic_edits(args)
    runs = pd.read_csv(args.runs)
    inside = ((runs["low"] <= runs["actual"]) & (runs["actual"] <= runs["high"])).mean()
    sign = (np.sign(runs["newton"]) == np.sign(runs["actual"])).mean()
    half = ((runs["high"] - runs["low"]) / 2 / runs["newton"].abs()).median()
    ratio = (runs["actual"] / runs["newton"]).median()
    print(f"{len(runs)} Add edits: coverage {inside:.0%}, sign {sign:.0%}, median relative half-width {half:.2f}, "
          f"median retrained/predicted {ratio:.2f}; load average at the end {os.getloadavg()[0]:.2f}")
    if "scaled" in runs:
        held = runs[~runs["audited"].astype(bool)]
        covered = ((held["scaled_low"] <= held["actual"]) & (held["actual"] <= held["scaled_high"])).mean()
        print(f"times the Add audit's ratio: {len(held)} edit(s) other than the audit's own, coverage {covered:.0%}, "
              f"median retrained/predicted {(held['actual'] / held['scaled']).median():.2f}")


if __name__ == "__main__":
    main()
