"""What the step scale multiplies (issue 25): the step, the step's change, or a scale searched along the step.

A removal's step scale is the audit set's ratio r = retrained / f(1), f(c) = B_gr(theta + c Delta theta) -
B_gr(theta) the change along the step. The lab read B_gr at the scaled step, f(r), the "scaled step"; the L1 and L2
bands were fitted on r f(1), the "scaled change" (``local_refit.py --bands``). On FB15k-237's L2 model the two
differ on the audit's own set by a fifth: f(2.79) = +0.330, where r f(1) = +0.419 = the retrain. A third way keeps
B_gr exact at a scaled step: c*, the c at which the audit set's f meets its retrain (:func:`searched_scale`).

For every top and bottom set of ``--runs`` (each set's retrained change as measured there; the audit set as
``local_refit.py --bands`` marks it, the top 16% of the occupation the audit chooses), this computes the step once
and writes its change along it: ``step`` f(1), ``scaled_change`` r f(1), ``scaled_step`` f(r), ``searched`` f(c*),
with r and c* (r clipped to the distance's range as the lab clips it; c* searched in it, r where none meets the
retrain) and f at the grid ``c_<c>``. The model: a stored one (``--model``) or the synthetic graph of
``local_refit.py`` (``--seed``, ``--epochs``, ``--distance``, eight negatives).

    python scale_search.py --seed 7 --epochs 100 --distance l2 \
        --runs results/local_refit_read_synthetic_k8_e100_l2.csv --out results/scale_search_synthetic_s7_l2.csv

``--bands NAME=ROWS ..`` (with ``--floors NAME=RUNS ..`` for the noise floors) fits band_fit.py's narrowest band of
each point on those rows, in-sample, each occupation held out and graph to graph, judges the lab's band of
``--distance`` (:func:`~kgbias_core.influence.prediction.scaled_band`) on each, and gives each point's share of
sets with the retrain's sign; ``--summary`` one row per point of those. ``--from-run RUN`` writes the rows of a
bench run of a scaled model from what it stored (its step, and its point as the lab showed it then), no step again.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from collections.abc import Callable
from pathlib import Path

import band_fit  # noqa: I001  (beside this file)
import numpy as np
import pandas as pd
import torch
from local_refit import scaled_rows, with_audit  # noqa: I001  (beside this file)
from whatif_accuracy import SYNTHETIC, model_or_synthetic  # noqa: I001  (beside this file)

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.commands.common import write_text
from kgbias_core.embeddings.store import StoredModel
from kgbias_core.influence.iterative import Vector
from kgbias_core.influence.prediction import (
    PREDICTION_TOLERANCE,
    _bias,
    _damping,
    _moved,
    _negatives_of,
    absolute_newton_step,
    scaled_band,
)
from kgbias_core.influence.retraining_check import removal_set
from kgbias_core.measures.groups import OccupationGroups
from kgbias_core.whatif.step_ratio import clipped_scale, step_scale_range

#: The walk's factor from the linear ratio towards the crossing, and the bisections in log c once bracketed:
#: 2^-30 of a factor of 1.25 is far below any figure the lab shows.
SCALE_FACTOR = 1.25
BISECTIONS = 30


def searched_scale(change_at: Callable[[float], float], retrained: float, *, linear: float,
                   scale_range: tuple[float, float]) -> tuple[float | None, list[tuple[float, float]]]:
    """The c in ``scale_range`` with ``change_at(c)`` = ``retrained``, the crossing nearest the ``linear`` ratio.

    ``change_at(c)``: the audit set's change of B_gr at theta + c Delta theta (:func:`change_along`). The walk starts
    at ``linear`` (clipped to the range), where a B_gr linear along the step already meets the retrain, and goes up
    by :data:`SCALE_FACTOR` while the change falls short of the retrain (same sign, smaller), down while it is past
    it, then bisects in log c inside the last step's bracket. None where the change never reaches the retrain
    inside the range (saturates below it, or has the other sign): the caller keeps the linear ratio, clipped.
    -> (c or None, every (c, change) read, in the order read)."""
    read: list[tuple[float, float]] = []
    target = abs(retrained)
    if not math.isfinite(retrained) or target == 0 or not math.isfinite(linear) or linear <= 0:
        return None, read

    def short(c: float) -> bool | None:  # True: short of the retrain; None: the other sign (no crossing there)
        change = change_at(c)
        read.append((c, change))
        if not math.isfinite(change) or change == 0 or math.copysign(1, change) != math.copysign(1, retrained):
            return None
        return abs(change) < target

    lowest, highest = scale_range
    c = min(max(linear, lowest), highest)
    below = short(c)
    if below is None:
        return None, read
    while True:
        nxt = c * SCALE_FACTOR if below else c / SCALE_FACTOR
        if not lowest <= nxt <= highest:
            edge = highest if below else lowest  # the range's end: a crossing between c and it, or none
            if edge == c:
                return None, read
            nxt = edge
        after = short(nxt)
        if after is None:
            return None, read
        if after != below:
            lo, hi = (c, nxt) if below else (nxt, c)  # short at lo, past at hi
            break
        if nxt in (lowest, highest):
            return None, read
        c = nxt
    lo, hi = math.log(lo), math.log(hi)
    for _ in range(BISECTIONS):
        middle = (lo + hi) / 2
        state = short(math.exp(middle))
        if state is None:  # the other sign between a short and a past point: no single crossing to trust
            return None, read
        lo, hi = (middle, hi) if state else (lo, middle)
    return math.exp((lo + hi) / 2), read


def change_along(model: StoredModel, step: Vector, groups: OccupationGroups, occupation_index: int
                 ) -> Callable[[float], float]:
    """f(c) = B_gr(theta + c Delta theta) - B_gr(theta) of one occupation along ``step`` (Delta theta), groups fixed,
    B_gr exact at every c (:func:`~kgbias_core.influence.prediction.newton_change` at scale c)."""
    before = _bias(model, groups, occupation_index)

    def change_at(c: float) -> float:
        return _bias(_moved(model, (c * step[0], c * step[1])), groups, occupation_index) - before

    return change_at


def removal_step(analysis: ModelAnalysis, removed: torch.Tensor) -> Vector:
    """Delta theta of a removal as the lab computes it (:func:`~kgbias_core.influence.prediction.predict_removal`,
    unscaled, no hinge): |H| with the analysis's negatives, active terms and operator, at the lab's tolerance."""
    model = analysis.model
    return absolute_newton_step(model, removed.to(model.triples.device), damping=_damping(model),
                                negatives=_negatives_of(analysis), tolerance=PREDICTION_TOLERANCE,
                                active=analysis.active_terms, hvp=analysis.absolute_hvp)


#: The points compared, as columns of the rows: the step's change times r (the lab's on L2 since 2026-12-06,
#: :data:`~kgbias_core.influence.prediction.CHANGE_SCALED_DISTANCES`), B_gr at the step times r (the lab's
#: elsewhere, and on L2 before), and B_gr at the step times c* (r where no c* was found).
POINTS = ("scaled_change", "scaled_step", "searched")
#: Where each set's change along its step is also written (c_<c>), to show the curve's bend.
GRID = (0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 10.0)


def set_rows(analysis: ModelAnalysis, sets: pd.DataFrame, distance: str) -> pd.DataFrame:
    """Per set of ``sets`` (the audit set first): its step and its change along it (module docstring)."""
    sets = pd.concat([sets[sets["in_audit"]], sets[~sets["in_audit"]]], ignore_index=True)
    out, r, c_star = [], None, None
    for row in sets.to_dict("records"):
        start = time.perf_counter()
        removed = removal_set(analysis.influence(row["occupation"]), kind=row["kind"], k=int(row["k"]))
        along = change_along(analysis.model, removal_step(analysis, removed), analysis.groups,
                             analysis.groups.index(row["occupation"]))
        seconds = time.perf_counter() - start
        step = along(1.0)
        if r is None:  # the audit set: the two scales read from it
            r = clipped_scale(row["actual"] / step, distance)
            c_star, read = searched_scale(along, row["actual"], linear=row["actual"] / step,
                                          scale_range=step_scale_range(distance))
            print(f"audit {row['occupation']} {row['kind']} {row['share']}%: retrained {row['actual']:+.4f}, "
                  f"f(1) {step:+.4f}, r {r:.4f}, c* {c_star} after {len(read)} reads")
            c_star = r if c_star is None else c_star
        out.append({**{key: row[key] for key in ("occupation", "name", "men", "women", "kind", "share", "k",
                                                 "in_audit", "actual")},
                    "step": step, "scaled_change": r * step, "scaled_step": along(r), "searched": along(c_star), "r": r,
                    "c_star": c_star, "step_s": seconds, **{f"c_{c:g}": along(c) for c in GRID}})
        print(f"{row['occupation']} {row['kind']} {row['share']}%: step {step:+.4f} scaled change {r * step:+.4f} "
              f"scaled step {out[-1]['scaled_step']:+.4f} searched {out[-1]['searched']:+.4f} "
              f"retrained {row['actual']:+.4f} "
              f"({seconds:.0f} s)", flush=True)
    return pd.DataFrame(out)


def band_table(graphs: dict[str, pd.DataFrame], floors: dict[str, pd.DataFrame], coverage: float,
               distance: str) -> pd.DataFrame:
    """Per point (:data:`POINTS`): band_fit's evaluation of its narrowest band, and the lab's band of ``distance``
    judged on each graph and on all."""
    out = []
    shown = scaled_band(distance)
    for point in (name for name in POINTS if all(name in rows for rows in graphs.values())):
        rows = {name: band_fit.targeted_rows(scaled_rows(data, floors.get(name, pd.DataFrame(
                    columns=["occupation", "kind", "share"])), point, unscaled=True)[0])
                for name, data in graphs.items()}
        evaluation = band_fit.evaluate(rows, coverage)
        if len(rows) == 1:
            evaluation = evaluation[~evaluation["evaluation"].str.contains("all")]
        targeted = {**rows, "all": pd.concat(rows.values(), ignore_index=True)} if len(rows) > 1 else rows
        lab = [band_fit.evaluation_row(f"lab band -> {name}", data, *band_fit.judged(data, *shown), *shown)
               for name, data in targeted.items()]
        ratio = {name: data["actual"] / data["scaled"] for name, data in targeted.items()}
        sign = {name: np.sign(data["actual"]) == np.sign(data["scaled"]) for name, data in targeted.items()}
        out.append(pd.concat([evaluation, pd.DataFrame(lab)], ignore_index=True).assign(
            point=point, median_ratio="; ".join(f"{name} {float(np.median(v)):.3f}" for name, v in ratio.items()),
            sign_right="; ".join(f"{name} {float(v.mean()):.3f}" for name, v in sign.items())))
    return pd.concat(out, ignore_index=True)[["point", "median_ratio", "sign_right", "evaluation", "sets", "coverage",
                                               "half_width", "half_width_large", "coverage_small", "a", "b"]]


def band_summary(table: pd.DataFrame) -> pd.DataFrame:
    """One row per point of :func:`band_table`: the lab's band on every set ("lab band -> all", or the one graph's),
    each occupation held out ("leave-one-out all"), and the share of sets with the retrain's sign."""
    def row(rows: pd.DataFrame, prefix: str) -> pd.Series:
        chosen = rows[rows["evaluation"].str.startswith(prefix)]
        every = chosen[chosen["evaluation"].str.endswith("all")]
        return (every if len(every) else chosen).iloc[0]

    out = []
    for point, rows in table.groupby("point", sort=False):
        lab, held = row(rows, "lab band ->"), row(rows, "leave-one-out")
        out.append({"point": point, "sets": int(lab["sets"]),
                    "sign_right": float(rows["sign_right"].iloc[0].split()[-1]),
                    "median_ratio": float(rows["median_ratio"].iloc[0].split()[-1]),
                    "lab_coverage": lab["coverage"], "lab_half_width": lab["half_width"],
                    "held_out_coverage": held["coverage"], "held_out_half_width": held["half_width"]})
    return pd.DataFrame(out)


def run_rows(run: pd.DataFrame) -> pd.DataFrame:
    """The rows of a ``whatif_accuracy.py --model`` run of a scaled model without a new step: its ``newton`` is f(1)
    and its ``scaled`` the lab's point when it ran, f(r) (its ``scale`` r); no searched scale (that needs the step)."""
    sets = run[run["kind"].isin(["top", "bottom"])]
    keep = ["occupation", "name", "men", "women", "kind", "share", "k", "in_audit", "actual"]
    return sets[keep].assign(step=sets["newton"], scaled_change=sets["newton"] * sets["scale"],
                             scaled_step=sets["scaled"], r=sets["scale"])


def _named(items: list[str]) -> dict[str, pd.DataFrame]:
    named = {}
    for item in items:
        name, _, path = item.partition("=")
        named[name] = pd.read_csv(path)
    return named


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, help="the sets and their retrained change (a local_refit.py --out, or a "
                                                  "whatif_accuracy.py run of --model)")
    parser.add_argument("--model", type=Path, help="a stored model (else the synthetic graph)")
    parser.add_argument("--seed", type=int, default=SYNTHETIC.seed)
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--distance", default="l2")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--from-run", type=Path, help="write the rows of this whatif_accuracy.py --model run (its "
                                                       "step and its point as it ran; run_rows) and stop")
    parser.add_argument("--bands", nargs="+", metavar="NAME=ROWS", help="fit bands on these --out files instead")
    parser.add_argument("--floors", nargs="*", default=(), metavar="NAME=RUNS", help="with --bands: noise floors")
    parser.add_argument("--coverage", type=float, default=0.95)
    parser.add_argument("--summary", type=Path, help="with --bands: one row per point here (band_summary)")
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    if args.from_run:
        write_text(run_rows(pd.read_csv(args.from_run)).to_csv(index=False, float_format="%.6g"), str(args.out))
        return
    if args.bands:
        table = band_table(_named(args.bands), _named(list(args.floors)), args.coverage, args.distance)
        print(table.round(3).to_string(index=False))
        write_text(table.to_csv(index=False, float_format="%.4f"), str(args.out))
        if args.summary:
            summary = band_summary(table)
            print(summary.round(3).to_string(index=False))
            write_text(summary.to_csv(index=False, float_format="%.4f"), str(args.summary))
        return
    torch.set_num_threads(args.threads)
    print(f"torch threads {args.threads}; load average {os.getloadavg()[0]:.2f} at start", flush=True)
    model = model_or_synthetic(args.model, seed=args.seed, epochs=args.epochs, distance=args.distance)
    distance = model.config.distance
    runs = pd.read_csv(args.runs)
    runs = runs[runs["kind"].isin(["top", "bottom"])].assign(in_audit=lambda d: d["in_audit"].astype(bool)
                                                             if "in_audit" in d else False)
    rows = set_rows(ModelAnalysis(model), with_audit(runs), distance)
    write_text(rows.to_csv(index=False, float_format="%.6g"), str(args.out))


if __name__ == "__main__":
    main()
