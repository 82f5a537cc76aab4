"""How far the L2 step's conjugate gradients must run (issue 25): each set's point at a cap of products.

On FB15k-237 with L2 a removal's step took about 5 minutes at one thread: 200 products of |H| at 1.9 s each, CG's
cap (:data:`~kgbias_core.influence.prediction.CG_ITERATIONS`), short of the lab's tolerance (results/step_cost_*.csv,
l2_conditioning_*.csv). Since 2026-12-06 the lab's L2 point is the audit's ratio times the step's change of B_gr
(:data:`~kgbias_core.influence.prediction.CHANGE_SCALED_DISTANCES`) and L2's band is 2.9 + 3.0/sqrt(m) times wide
(scale_search.py), so a step a few percent off may cost nothing the band can see. This script runs each set's CG once
to the largest of ``--caps`` (or to the lab's tolerance), reads the step's change of B_gr at every cap from the
iterate there (``on_iterate``), and per cap scales every set by that cap's own audit ratio (the audit set's retrain
over its step at the cap, as an audit made at that cap would) and judges it by L2's band: coverage, sign, median
half-width, the narrowest band fitted without each occupation, and the point's relative distance from the largest
cap's.

    python l2_cap.py --seed 7 --runs results/scale_search_synthetic_s7_l2.csv --caps 10,25,50,100,200 \\
        --out results/l2_cap_synthetic_s7.csv
    python l2_cap.py --model M --runs results/scale_search_fb15k237_l2_k8.csv --caps 10,25,50,100 --out ..
    python l2_cap.py --summarize NAME=OUT .. --floors NAME=RUNS .. --out SUMMARY.csv

``--runs``: a scale_search.py rows file (each set's k, retrained change and audit mark). Where ``--caps`` stop short
of the lab's cap (:data:`~kgbias_core.influence.prediction.CG_ITERATIONS`), the runs' ``step`` (the lab's step as
they stored it) is written as that cap's column, so a long solve is not run again.
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
from local_refit import scaled_rows  # noqa: I001  (beside this file)
from whatif_accuracy import SYNTHETIC, model_or_synthetic  # noqa: I001  (beside this file)

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.commands.common import write_text
from kgbias_core.influence.prediction import (
    CG_ITERATIONS,
    PREDICTION_TOLERANCE,
    _bias,
    _damping,
    _moved,
    absolute_curvature_hvp,
    preconditioned_cg,
    removal_gradient,
    scaled_band,
)
from kgbias_core.influence.retraining_check import removal_set


def cap_rows(analysis: ModelAnalysis, sets: pd.DataFrame, caps: list[int]) -> pd.DataFrame:
    """Per set: the step's change of B_gr at each cap (``step_<cap>``; the last iterate where CG met the tolerance
    before it), the products CG took to the tolerance or the largest cap, and the seconds of the solve."""
    model, groups = analysis.model, analysis.groups
    operator = absolute_curvature_hvp(model, active=analysis.active_terms)  # built once: one model, many sets
    out = []
    for row in sets.to_dict("records"):
        index = groups.index(row["occupation"])
        before = _bias(model, groups, index)
        removed = removal_set(analysis.influence(row["occupation"]), kind=row["kind"], k=int(row["k"]))
        read: dict[int, float] = {}
        count = [0]

        def on_iterate(i: int, x, index=index, before=before, read=read, count=count) -> None:
            count[0] = i
            if i in caps:
                read[i] = _bias(_moved(model, x), groups, index) - before

        start = time.perf_counter()
        step = preconditioned_cg(operator, removal_gradient(model, removed.to(model.triples.device)),
                                 diagonal=operator.diagonal, damping=_damping(model), iterations=max(caps),
                                 tolerance=PREDICTION_TOLERANCE, on_iterate=on_iterate)
        seconds = time.perf_counter() - start
        products = count[0]
        final = _bias(_moved(model, step), groups, index) - before
        points = {f"step_{cap}": read.get(cap, final) for cap in caps}  # met the tolerance before a cap: the last
        if max(caps) < CG_ITERATIONS and "step" in row:  # the lab's own cap, as the runs stored its step
            points[f"step_{CG_ITERATIONS}"] = float(row["step"])
        out.append({**{key: row[key] for key in ("occupation", "name", "men", "women", "kind", "share", "k",
                                                 "in_audit", "actual")},
                    **points, "products": products, "solve_s": seconds})
        print(f"{row['name']} {row['kind']} {row['share']}%: " + " ".join(f"{v:+.4f}" for v in points.values())
              + f" retrained {row['actual']:+.4f} ({products} products, {seconds:.0f} s)", flush=True)
    return pd.DataFrame(out)


def cap_summary(graphs: dict[str, pd.DataFrame], floors: dict[str, pd.DataFrame], coverage: float,
                distance: str = "l2") -> pd.DataFrame:
    """Per cap (the ``step_<cap>`` columns every graph has), each graph's sets scaled by its audit ratio at that
    cap, judged together by the lab's band of ``distance`` and by band_fit's held-out fit (module docstring)."""
    caps = sorted(int(c[5:]) for c in set.intersection(*(set(g.columns) for g in graphs.values()))
                  if c.startswith("step_"))
    table = point_summary(graphs, floors, coverage, {cap: f"step_{cap}" for cap in caps}, f"step_{caps[-1]}",
                          distance)
    return table.rename(columns={"point": "cap"})


def point_summary(graphs: dict[str, pd.DataFrame], floors: dict[str, pd.DataFrame], coverage: float,
                  columns: dict, reference: str, distance: str = "l2") -> pd.DataFrame:
    """Per point column (``columns``: its name in the table -> the column every graph has), each graph's sets scaled
    by that column's own audit ratio (retrained / point on the audit set), judged together by the lab's band of
    ``distance``, by the sign and by band_fit's narrowest band fitted without each occupation; ``off``: the point's
    relative distance from the ``reference`` column."""
    shown = scaled_band(distance)
    out = []
    for label, column in columns.items():
        rows, ratios = {}, []
        for name, data in graphs.items():
            audit = data[data["in_audit"].astype(bool)].iloc[0]
            ratio = float(audit["actual"] / audit[column])
            ratios.append(f"{name} {ratio:.2f}")
            scaled = data.assign(point=data[column] * ratio)
            runs = floors.get(name, pd.DataFrame(columns=["occupation", "kind", "share"]))
            rows[name] = band_fit.targeted_rows(scaled_rows(scaled, runs, "point", unscaled=True)[0])
        every = pd.concat(rows.values(), ignore_index=True)
        covered, width = band_fit.judged(every, *shown)
        evaluation = band_fit.evaluate(rows, coverage)
        held = evaluation[evaluation["evaluation"].str.startswith("leave-one-out")].iloc[-1]
        off = ((every[column] - every[reference]).abs() / every[reference].abs()).to_numpy()
        out.append({"point": label, "audit_ratio": "; ".join(ratios), "sets": len(every),
                    "coverage": covered.mean(), "half_width": float(np.median(width)),
                    "sign_right": float((np.sign(every["scaled"]) == np.sign(every["actual"])).mean()),
                    "held_out_coverage": held["coverage"], "held_out_half_width": held["half_width"],
                    "off_median": float(np.median(off)), "off_p90": float(np.quantile(off, 0.9))})
    return pd.DataFrame(out)


def _named(items) -> dict[str, pd.DataFrame]:
    return {name: pd.read_csv(path) for name, _, path in (item.partition("=") for item in items)}


def step_parser(doc: str, caps: str) -> argparse.ArgumentParser:
    """The arguments this script and its sibling l2_negatives.py share: the sets and their retrains, the model (or
    the synthetic graph), the caps, and the summary of their --out files."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--runs", type=Path, nargs="+", help="the sets and their retrains (one or more files)")
    parser.add_argument("--model", type=Path, help="a stored L2 model (else the synthetic graph with L2)")
    parser.add_argument("--seed", type=int, default=SYNTHETIC.seed)
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--caps", default=caps)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--summarize", nargs="+", metavar="NAME=OUT", help="summarize these --out files instead")
    parser.add_argument("--floors", nargs="*", default=(), metavar="NAME=RUNS", help="with --summarize")
    parser.add_argument("--coverage", type=float, default=0.95)
    parser.add_argument("--out", required=True, type=Path)
    return parser


def step_inputs(args: argparse.Namespace) -> tuple[ModelAnalysis, pd.DataFrame]:
    """The analysis of ``--model`` (or of the synthetic graph of ``--seed`` with L2) and ``--runs``' sets, at
    ``--threads`` torch threads."""
    torch.set_num_threads(args.threads)
    print(f"torch threads {args.threads}; load average {os.getloadavg()[0]:.2f} at start", flush=True)
    model = model_or_synthetic(args.model, seed=args.seed, epochs=args.epochs, distance="l2")
    return ModelAnalysis(model), pd.concat([pd.read_csv(path) for path in args.runs], ignore_index=True)


def main() -> None:
    args = step_parser(__doc__, "10,25,50,100,200").parse_args()
    if args.summarize:
        table = cap_summary(_named(args.summarize), _named(args.floors), args.coverage)
        print(table.round(3).to_string(index=False))
        write_text(table.to_csv(index=False, float_format="%.4f"), str(args.out))
        return
    analysis, sets = step_inputs(args)
    rows = cap_rows(analysis, sets, [int(c) for c in args.caps.split(",")])
    write_text(rows.to_csv(index=False, float_format="%.6g"), str(args.out))


if __name__ == "__main__":
    main()
