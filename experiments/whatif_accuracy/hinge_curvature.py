"""The Newton step with the hinge's own curvature: a step whose size needs no audit? (issue 25)

The lab's removal step, Delta theta = |H|^{-1} sum_{z in S} grad L(z) (kgbias_core/influence/prediction.py), counts
the curvature of psi in each active margin term and none of the hinge [s]_+ itself, s = gamma + psi(z) - psi(z'):
relu has none, except on its kink. But a trained model holds many terms near the kink (half of FB13's with one
negative, docs/results/whatif.md, "an optimum held by its kinks"), and a retrain moves 0.15-0.3 of the step on the
one-negative models, which is why every model needs its one-retrain audit to scale the step. A hinge smoothed at
temperature tau, l_tau(s) = tau log(1 + e^{s / tau}), has the Gauss-Newton curvature

    l_tau''(s) g g^T = sigma(s / tau) (1 - sigma(s / tau)) / tau * g g^T,     g = d s / d theta,

1 / (4 tau) on a term at its kink, fading a few tau away. This script adds it, weighted 1/K as every term of J, to
|H| (:func:`hinge_hvp`; squared L2, where d psi / d x = 2 x) for a grid of tau in units of the margin gamma, and
sets the step's change of B_gr (B_gr exact at theta + Delta theta, as the lab) beside masked retrains of the same
removals: the retrained / predicted ratio of a step that needs no audit would sit near 1, and near it on every set.

tau = 0 is the lab's step as computed. ``--smooth-rhs`` adds, per tau, the step of the removed triples' smoothed
gradient (sigma(s / tau) for relu's 0 or 1; columns ``step_<tau>s``). Tiny tau (0.003-0.1, the terms on the kink as
near-constraints) was tried first on the synthetic graph and lost: retrained / predicted 0.7 to 158.

    nice python experiments/whatif_accuracy/hinge_curvature.py --dataset synthetic --out OUT.csv \
        [--taus 0,0.5,1] [--occupations 8] [--shares 2,8,32] [--threads 1] [--actual-from EARLIER.csv]
    nice python experiments/whatif_accuracy/hinge_curvature.py --dataset fb15k237 --negatives 1 --shares 2,16 \
        --sets-from results/fb15k237_whatif.csv --out OUT.csv     # a bench's sets and retrains: no retrain here
    python experiments/whatif_accuracy/hinge_curvature.py --summarize OUT.csv   # writes OUT_summary.csv

``--sets-from`` takes a what-if bench's targeted sets on the very model its bench retrained (trained here again
from the same config and seed: ``bench_newton``, the bench's step as computed, equals ``step_0.0`` when it is that
model, and a set whose size k differs stops the run), so its retrained changes are reused, never made again.
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
from whatif_accuracy import chosen_occupations  # noqa: I001  (this folder's bench, beside this file: its occupations)

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.commands.common import append_row
from kgbias_core.data.datasets import load_dataset
from kgbias_core.embeddings.config import default_train_config
from kgbias_core.embeddings.objective import negatives_count
from kgbias_core.embeddings.store import is_model_dir, load_model, save_model
from kgbias_core.embeddings.training import train_model
from kgbias_core.influence.hinge_curvature import hinge_curvature_hvp
from kgbias_core.influence.prediction import (
    PREDICTION_TOLERANCE,
    _bias,
    _moved,
    absolute_curvature_hvp,
    preconditioned_cg,
    removal_gradient,
)
from kgbias_core.influence.retraining_check import masked_retrain_bias, removal_set
from kgbias_core.tasks.prediction_audit import audit_set

KINDS = ("top", "bottom")


def hinge_hvp(model, tau: float, base=None):
    """(H_T's product, its Jacobi diagonal), tau in units of the margin: the operator of
    :func:`kgbias_core.influence.hinge_curvature.hinge_curvature_hvp` (tau = 0: |H| alone, the lab's)."""
    hvp = hinge_curvature_hvp(model, tau, base=base)
    return hvp, hvp.diagonal


def smooth_removal_gradient(model, removed: torch.Tensor, tau: float):
    """sum_{z in S} (1/K) sum_j grad l_tau(s_zj): the removed triples' gradient under the hinge smoothed at tau
    (``--smooth-rhs``)."""
    removed = torch.unique(removed)
    n = model.triples.shape[0]
    k = negatives_count(model.frozen_negatives, n)
    rows = (removed.unsqueeze(0) + n * torch.arange(k).unsqueeze(1)).reshape(-1)  # each triple's K pairs
    E = model.entity_embeddings.detach().requires_grad_(True)
    R = model.relation_embeddings.detach().requires_grad_(True)
    pairs, negatives = model.triples[rows % n], model.frozen_negatives[rows]
    x = E[pairs[:, 0]] + R[pairs[:, 1]] - E[pairs[:, 2]]
    y = E[negatives[:, 0]] + R[negatives[:, 1]] - E[negatives[:, 2]]
    t = tau * model.config.margin
    loss = (t * torch.nn.functional.softplus((model.config.margin + (x * x).sum(-1) - (y * y).sum(-1)) / t)).sum()
    return torch.autograd.grad(loss / k, (E, R))


def step_change(model, removed, hvp, diagonal, groups, index, rhs=None) -> float:
    """B_gr(theta + Delta theta) - B_gr(theta) of one occupation, Delta theta = the operator's solve of ``rhs``
    (default: the removal's gradient, as the lab), at the lab's CG tolerance."""
    rhs = removal_gradient(model, removed) if rhs is None else rhs
    if not (bool(rhs[0].any()) or bool(rhs[1].any())):
        return 0.0
    step = preconditioned_cg(hvp, rhs, diagonal=diagonal, iterations=500, tolerance=PREDICTION_TOLERANCE)
    return _bias(_moved(model, step), groups, index) - _bias(model, groups, index)


def the_model(dataset: str, data_dir, store: Path, negatives: int):
    """The data set's default model with ``negatives`` frozen negatives (seed 0), from ``store`` or trained there."""
    graph = load_dataset(dataset, data_dir=data_dir)
    name = f"{graph.name}-k{negatives}"
    if is_model_dir(store / name):
        return load_model(store / name, device="cpu")
    config = replace(default_train_config(graph.name), negatives_per_triple=negatives)
    model = train_model(graph, config, name=name, device=torch.device("cpu"))
    save_model(model, store)
    return model


def model_of_run(args) -> tuple:
    """(model, its analysis) of a run: torch threads set, the load printed (the studies' runs share this start)."""
    torch.set_num_threads(args.threads)
    print(f"load average {os.getloadavg()[0]:.2f}; {args.threads} thread(s)", flush=True)
    model = the_model(args.dataset, args.data_dir, args.store, args.negatives)
    return model, ModelAnalysis(model)


def run(args) -> None:
    model, analysis = model_of_run(args)
    groups = analysis.groups
    taus = [float(v) for v in args.taus.split(",")]
    operators, base = {}, absolute_curvature_hvp(model)
    for tau in taus:
        started = time.perf_counter()
        operators[tau] = hinge_hvp(model, tau, base)
        print(f"tau {tau}: operator {time.perf_counter() - started:.1f} s", flush=True)
    done = pd.read_csv(args.out) if args.out.exists() else None
    reuse = pd.read_csv(args.sets_from or args.actual_from) if (args.sets_from or args.actual_from) else None
    occupations = chosen_occupations(groups, args.occupations)
    if args.sets_from:  # a bench's targeted sets on this very model: its occupations, sizes and retrains
        reuse = reuse[reuse["kind"] != "random"]
        occupations = [groups.index(label) for label in dict.fromkeys(reuse["occupation"])]
    base = None  # the unedited retrain, made when a set's retrain is not read back
    for index in occupations:
        label = groups.labels[index]
        influence = analysis.influence(label)
        moving = int((influence != 0).sum())
        for kind in KINDS:
            for share in (int(v) for v in args.shares.split(",")):
                def here(frame, label=label, kind=kind, share=share):
                    return frame[(frame["occupation"] == label) & (frame["kind"] == kind) & (frame["share"] == share)]

                if (args.sets_from and not len(here(reuse))) or (done is not None and len(here(done))):
                    continue
                k = max(1, moving * share // 100)
                removed = removal_set(influence, kind=kind, k=k)
                row = {"occupation": label, "men": int(groups.n_male[index]), "women": int(groups.n_female[index]),
                       "kind": kind, "share": share, "k": k}
                for tau in taus:
                    hvp, diagonal = operators[tau]
                    row[f"step_{tau}"] = step_change(model, removed, hvp, diagonal, groups, index)
                    if tau > 0 and args.smooth_rhs:
                        row[f"step_{tau}s"] = step_change(model, removed, hvp, diagonal, groups, index,
                                                          rhs=smooth_removal_gradient(model, removed, tau))
                known = None if reuse is None else here(reuse)
                known = None if known is None else known[known["k"] == k]
                if known is not None and len(known):
                    row["actual"] = float(known["actual"].iloc[0])
                    if "newton" in known:  # the bench's own step as computed: this is the bench's model if equal
                        row["bench_newton"] = float(known["newton"].iloc[0])
                elif args.sets_from:
                    raise SystemExit(f"error: {label} {kind} {share}%: k = {k} here, not the bench's (another model)")
                else:
                    if base is None:
                        base = masked_retrain_bias(model, removed=None, groups=groups)
                    row["actual"] = float(masked_retrain_bias(model, removed=removed, groups=groups)[index]
                                          - base[index])
                append_row(row, args.out)
                print({key: (round(v, 3) if isinstance(v, float) else v) for key, v in row.items()}, flush=True)


def audit_taus(args) -> None:
    """``--audit-taus``: the step of the model's audit set (the lab's: the top 16% of the moving triples of
    ``--audit``, :func:`~kgbias_core.tasks.prediction_audit.audit_set`) at each tau, beside the audit's retrained
    change ``--audit-retrained`` (from the model's stored audit): the tau at which the step meets it is the one the
    audit would set in place of a scale. No retrain."""
    torch.set_num_threads(args.threads)
    model = the_model(args.dataset, args.data_dir, args.store, args.negatives)
    analysis = ModelAnalysis(model)
    index = analysis.groups.index(args.audit)
    moving, k, removed = audit_set(analysis, args.audit)
    base = absolute_curvature_hvp(model)
    for tau in (float(v) for v in args.audit_taus.split(",")):
        hvp, diagonal = hinge_hvp(model, tau, base)
        row = {"occupation": args.audit, "moving": moving, "k": k, "tau": tau,
               "step": step_change(model, removed, hvp, diagonal, analysis.groups, index),
               "audit_retrained": args.audit_retrained}
        append_row(row, args.out)
        print(row, flush=True)


def summary(runs: pd.DataFrame, estimators: list[str] | None = None) -> pd.DataFrame:
    """Per estimator (tau) and group size (all sets; 10+ of each gender; fewer than 10 of one): retrained / predicted
    (median, min, max), the share of sets within 30% of the point as computed (no audit, no scale) and within 30%
    once scaled by the median ratio, and the share with the sign right. ``estimators``: those columns' taus only
    (e.g. "0.0", "1.0s"; None: every step column)."""
    smaller = runs[["men", "women"]].min(axis=1)
    rows = []
    columns = [c for c in runs.columns if c.startswith("step_")]
    for column in columns if estimators is None else [f"step_{tau}" for tau in estimators]:
        for sets, mask in (("all", smaller >= 0), ("10+ of each gender", smaller >= 10),
                           ("fewer than 10 of one", smaller < 10)):
            part = runs[mask]
            if not len(part):
                continue
            point, actual = part[column], part["actual"]
            ratio = actual / point
            scaled = point * float(ratio.median())
            rows.append({"estimator": column[5:], "sets": sets, "n": len(part), "median_ratio": ratio.median(),
                         "min_ratio": ratio.min(), "max_ratio": ratio.max(),
                         "within_30pct": float(((actual - point).abs() <= 0.3 * point.abs()).mean()),
                         "within_30pct_scaled": float(((actual - scaled).abs() <= 0.3 * scaled.abs()).mean()),
                         "sign_right": float((np.sign(actual) == np.sign(point)).mean())})
    return pd.DataFrame(rows)


def write_summary(path: Path, estimators: list[str] | None = None) -> pd.DataFrame:
    table = summary(pd.read_csv(path), estimators)
    table.to_csv(path.with_name(path.stem + "_summary.csv"), index=False)
    with pd.option_context("display.width", 200):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return table


def model_arguments(description: str) -> argparse.ArgumentParser:
    """A parser with the model options of the studies' runs (``--dataset``, ``--data-dir``, ``--store``,
    ``--negatives``, ``--threads``) and ``--out``: :func:`model_of_run` reads them."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--dataset", default="synthetic")
    parser.add_argument("--data-dir", default=os.environ.get("KGBIAS_DATA_DIR"))
    parser.add_argument("--store", type=Path, default=Path("/tmp/kgbias-hinge-store"))
    parser.add_argument("--negatives", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path)
    return parser


def main() -> None:
    parser = model_arguments(__doc__.splitlines()[0])
    parser.add_argument("--taus", default="0,0.5,1", help="temperatures in units of the margin (0: the lab's step)")
    parser.add_argument("--occupations", type=int, default=8)
    parser.add_argument("--shares", default="2,8,32")
    parser.add_argument("--summarize", type=Path, help="only write SUMMARIZE_summary.csv from a run's CSV")
    parser.add_argument("--estimators", help="with --summarize: these step columns' taus only (0.0,1.0,1.0s)")
    parser.add_argument("--actual-from", type=Path, help="an earlier run's CSV: its retrained changes, not retrained")
    parser.add_argument("--sets-from", type=Path,
                        help="a what-if bench's CSV on this model: its targeted sets and retrains, none made here")
    parser.add_argument("--audit-taus", help="the audit set's step at these taus (with --audit, --audit-retrained)")
    parser.add_argument("--audit", help="the audited occupation's label")
    parser.add_argument("--audit-retrained", type=float, help="the audit's retrained change (its stored record)")
    parser.add_argument("--smooth-rhs", action="store_true", help="also the removed triples' smoothed gradient")
    args = parser.parse_args()
    if args.summarize:
        write_summary(args.summarize, args.estimators.split(",") if args.estimators else None)
        return
    if args.audit_taus:
        audit_taus(args)
        return
    run(args)
    write_summary(args.out)


if __name__ == "__main__":
    main()
