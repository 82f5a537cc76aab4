"""Speed of the closed-form influence (METHODS §4) on FB15k-237, against LiSSA (Koh & Liang).

    KGBIAS_DATA_DIR=../shared/data python bench/bench_influence.py [--model DIR] [--lissa-depth 200]

Prints ms per occupation (target <= 50 ms for all 272k triples on one occupation), seconds for all
occupations (target <= 1 s), LiSSA's seconds per occupation and the ratio of times. If
experiments/influence_vs_retraining/out/influence_accuracy.csv exists (from
experiments/influence_vs_retraining/validate_influence.py), both methods' predictions for the same removal
sets are correlated with the actual retraining changes recorded there.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from kgbias_core.analysis import ModelAnalysis  # noqa: E402
from kgbias_core.embeddings.store import load_model  # noqa: E402
from kgbias_core.embeddings.training import default_device  # noqa: E402
from kgbias_core.influence.closed_form import all_triple_influences, influence_context, triple_influence  # noqa: E402
from kgbias_core.influence.iterative import group_bias_rhs, influence_from_solution, lissa_solve  # noqa: E402
from kgbias_core.influence.retraining_check import removal_set  # noqa: E402
from kgbias_core.tables import entity_name  # noqa: E402

OCCUPATIONS = ("/m/02hrh1q", "/m/0d1pc", "/m/0dxtg")  # Actor, Model, Screenwriter


def timed(fn, repeats: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="cached_models/fb15k237-transe")
    parser.add_argument("--lissa-depth", type=int, default=200)
    parser.add_argument("--lissa-batch", type=int, default=16384)
    parser.add_argument("--lissa-repeats", type=int, default=3)
    parser.add_argument("--lissa-damping", type=float, default=None, help="default: 3x the model's lambda")
    parser.add_argument("--accuracy", default="experiments/influence_vs_retraining/out/influence_accuracy.csv")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch intra-op threads (1: these ops are small; threads oversubscribe a busy CPU)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = default_device()
    model = load_model(args.model).to(device)
    print(f"device {device}, torch threads {torch.get_num_threads()}, |G| = {model.triples.shape[0]}")
    setup, context = timed(lambda: influence_context(model), 1)
    print(f"per-model precomputation (margins, residuals): {setup * 1000:.0f} ms (once per model)")
    analysis = ModelAnalysis(model)
    closed_ms = {}
    for label in OCCUPATIONS:
        index = analysis.groups.index(label)
        seconds, _ = timed(lambda i=index: triple_influence(context, i), 7)
        closed_ms[label] = seconds * 1000
        name = entity_name(analysis, model.entity_id(label))
        print(f"closed form, one occupation, {name:12s}: {seconds * 1000:7.1f} ms"
              f"  (target <= 50 ms: {'ok' if seconds <= 0.05 else 'MISSED'})")
    seconds, (rows, _) = timed(lambda: all_triple_influences(context), 3)
    print(f"closed form, all {rows.shape[0]} occupations with both genders: {seconds:.2f} s"
          f"  (target <= 1 s: {'ok' if seconds <= 1 else 'MISSED'})")

    damping = args.lissa_damping or 3 * model.damping
    accuracy = pd.read_csv(args.accuracy) if Path(args.accuracy).is_file() else None
    for label in OCCUPATIONS[:1] if accuracy is None else OCCUPATIONS:
        index = analysis.groups.index(label)
        rhs = group_bias_rhs(context, index)
        lissa_seconds, solution = timed(
            lambda r=rhs: lissa_solve(model, r, damping=damping, depth=args.lissa_depth,
                                      batch_size=args.lissa_batch, repeats=args.lissa_repeats), 1)
        lissa = influence_from_solution(context, model, solution)
        closed = triple_influence(context, index)
        name = entity_name(analysis, model.entity_id(label))
        print(f"LiSSA (depth {args.lissa_depth}, batch {args.lissa_batch}, {args.lissa_repeats} repeats, "
              f"lambda {damping:.1f}), {name}: {lissa_seconds:.1f} s; ratio LiSSA / closed form = "
              f"{lissa_seconds * 1000 / closed_ms[label]:.0f}x")
        if accuracy is None:
            continue
        runs = accuracy[accuracy["occupation"] == label]
        predicted = {"closed": [], "lissa": []}
        for kind, k in zip(runs["kind"], runs["k"], strict=True):
            removed = removal_set(closed, kind=kind, k=int(k))  # the sets retrained by validate_influence.py
            predicted["closed"].append(float(closed[removed].sum()))
            predicted["lissa"].append(float(lissa[removed].sum()))
        actual = runs["actual"].to_numpy()
        for method, values in predicted.items():
            values = np.array(values)
            targeted = (runs["kind"] != "random").to_numpy()
            scale = float(values[targeted] @ actual[targeted] / (values[targeted] @ values[targeted]))
            print(f"  {method:6s} r vs retraining = {np.corrcoef(values, actual)[0, 1]:.4f}, "
                  f"actual/predicted = {scale:.3f}")


if __name__ == "__main__":
    main()
