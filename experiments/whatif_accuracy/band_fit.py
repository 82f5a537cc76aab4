"""The band of the scaled Newton step (issue 25): fitted on masked retrains, checked on occupations held out.

The lab's removal prediction is the Newton step times the model's own step ratio, with the interval
[p / f, p * f] widened by the noise floor s on both sides (:func:`kgbias_core.influence.prediction.band_factor`,
:func:`~kgbias_core.influence.prediction.with_noise_floor`), f = a + b / sqrt(m), m the rarer gender's count.
This script reads the rows of ``whatif_accuracy.py --model`` runs (columns ``scaled`` and ``floor``; the audited
occupation, whose retrain set the scale, is left out), and for a grid of (a, b) chooses the pair with the
smallest median relative half-width ((high - low) / 2 / |p|) among those that cover at least ``--coverage``
of the targeted sets (top and bottom). It reports that fit three ways:

- ``in-sample``: fitted and judged on the same sets (optimistic);
- ``leave-one-out``: each occupation of each graph judged with the pair fitted on every other occupation,
  of its own graph and of the others (what a new occupation sees);
- ``graph A -> B``: fitted on one graph's runs, judged on another's (what a new graph sees); ``all -> B``:
  the pair fitted on every graph's runs (the constants the lab uses), on graph B's sets.

    python experiments/whatif_accuracy/band_fit.py \
        --runs fb15k237=experiments/whatif_accuracy/results/fb15k237_whatif.csv \
               synthetic=experiments/whatif_accuracy/results/synthetic_default_whatif.csv \
        --out experiments/whatif_accuracy/results/band_fit.csv

Random sets are not fitted on: their point is about 0, and they are judged by the noise floor alone.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from kgbias_core.commands.common import write_text
from kgbias_core.influence.prediction import band_ends
from kgbias_core.whatif.step_ratio import clipped_scale

#: The grid of (a, b) searched; a >= 1 keeps the point inside its own band.
BASES = np.round(np.arange(1.0, 3.001, 0.05), 2)
SMALLS = np.round(np.arange(0.0, 3.001, 0.05), 2)


def targeted_rows(runs: pd.DataFrame) -> pd.DataFrame:
    """The top and bottom sets of a run file, audited occupation left out, with m (the rarer gender's count)."""
    return _sized(runs[(runs["kind"] != "random") & ~runs["in_audit"].astype(bool)])


def random_rows(runs: pd.DataFrame) -> pd.DataFrame:
    """The random sets of a run file, with m as :func:`targeted_rows` gives it: judged, never fitted on."""
    return _sized(runs[runs["kind"] == "random"])


def _sized(rows: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``rows`` with m, the rarer gender's count (at least 1: the band's 1 / sqrt(m))."""
    return rows.assign(m=np.minimum(rows["men"], rows["women"]).clip(lower=1))


def audit_ratio(runs: pd.DataFrame, column: str, *, distance: str | None = None) -> float:
    """Retrained / ``column`` on the audited occupation's top 16% set (the set ``kgbias prepare``'s audit retrains):
    the ratio a point of ``column`` is scaled by, as the lab scales its step. ``distance``: the models' distance,
    whose range the ratio is clipped to as the lab clips it (:func:`~kgbias_core.whatif.step_ratio.step_scale_range`;
    None: as measured, for a point the lab does not scale, such as the closed form)."""
    audit = runs[runs["in_audit"].astype(bool) & (runs["kind"] == "top") & (runs["share"] == 16)]
    if audit.empty:
        raise SystemExit("no audited top-16% set in the runs: no audit ratio")
    ratio = float(audit["actual"].iloc[0] / audit[column].iloc[0])
    return ratio if distance is None else clipped_scale(ratio, distance)


def intervals(rows: pd.DataFrame, base, small) -> tuple[np.ndarray, np.ndarray]:
    """The lab's interval, f = base + small / sqrt(m), widened by the floor (:func:`band_ends`). ``base`` and
    ``small``: floats, or [G, 1] arrays of a grid's pairs (then [G, n] ends)."""
    return band_ends(rows["scaled"].to_numpy(float), base + small / np.sqrt(rows["m"].to_numpy(float)),
                     np.nan_to_num(rows["floor"].to_numpy(float)))


def judged(rows: pd.DataFrame, base, small) -> tuple[np.ndarray, np.ndarray]:
    """(covered, relative half-width) of each set under the band (base, small): [n] each, or [G, n] for a grid."""
    low, high = intervals(rows, base, small)
    actual = rows["actual"].to_numpy(float)
    return (low <= actual) & (actual <= high), (high - low) / 2 / np.abs(rows["scaled"].to_numpy(float))


def fit(rows: pd.DataFrame, coverage: float) -> tuple[float, float]:
    """The (a, b) of the grid with the smallest median half-width among those covering >= ``coverage``; where
    none does, the one covering most (then narrowest). Ties go to the first pair in grid order (a, then b).

    The whole grid is judged at once (:func:`judged` over [pairs, sets] arrays): the same choice as a loop over the
    pairs, without 2,501 rounds of pandas per fit (a leave-one-out fit took about 1.4 s that way)."""
    base, small = (g.reshape(-1, 1) for g in np.meshgrid(BASES, SMALLS, indexing="ij"))  # [G, 1] each
    covered, widths = judged(rows, base, small)  # [G, n] each
    share, width = covered.mean(axis=1), np.median(widths, axis=1)  # [G]
    short = share < coverage
    best = np.lexsort((width, np.where(short, -share, 0.0), short))[0]  # stable: the first of equal keys
    return float(base[best, 0]), float(small[best, 0])


def evaluation_row(evaluation: str, rows: pd.DataFrame, covered: np.ndarray, width: np.ndarray, base: float | str,
         small: float | str) -> dict:
    large = (rows["m"] >= 10).to_numpy()
    return {"evaluation": evaluation, "sets": len(rows), "coverage": covered.mean(),
            "half_width": float(np.median(width)),
            "half_width_large": float(np.median(width[large])) if large.any() else np.nan,
            "coverage_large": covered[large].mean() if large.any() else np.nan,
            "coverage_small": covered[~large].mean() if (~large).any() else np.nan, "a": base, "b": small}


def evaluate(graphs: dict[str, pd.DataFrame], coverage: float) -> pd.DataFrame:
    """In-sample, leave-one-occupation-out and graph-to-graph rows (module docstring)."""
    pooled = pd.concat([rows.assign(graph=name) for name, rows in graphs.items()], ignore_index=True)
    out = []
    for name, rows in [*graphs.items(), ("all", pooled)]:
        a, b = fit(rows, coverage)
        out.append(evaluation_row(f"in-sample {name}", rows, *judged(rows, a, b), a, b))
    a, b = fit(pooled, coverage)  # the pooled pair (the constants of prediction.py) on each graph
    for name, rows in graphs.items():
        out.append(evaluation_row(f"all -> {name}", rows, *judged(rows, a, b), a, b))
    held = []
    for (graph, occupation), rows in pooled.groupby(["graph", "occupation"], sort=False):
        rest = pooled[~((pooled["graph"] == graph) & (pooled["occupation"] == occupation))]
        covered, width = judged(rows, *fit(rest, coverage))
        held.append(pd.DataFrame({"graph": graph, "covered": covered, "width": width, "m": rows["m"].to_numpy()}))
    held = pd.concat(held, ignore_index=True)
    for name in [*graphs, "all"]:
        part = held if name == "all" else held[held["graph"] == name]
        out.append(evaluation_row(f"leave-one-out {name}", part, part["covered"].to_numpy(), part["width"].to_numpy(),
                        "per fold", "per fold"))
    for source, train in graphs.items():
        for target, test in graphs.items():
            if source != target:
                a, b = fit(train, coverage)
                out.append(evaluation_row(f"{source} -> {target}", test, *judged(test, a, b), a, b))
    return pd.DataFrame(out)


def cli(description: str, table_of: Callable[[dict[str, pd.DataFrame], float], pd.DataFrame]) -> None:
    """The command line of this script and of its siblings that fit bands: ``--runs NAME=CSV ..`` (whole run files
    by name), ``--coverage``, ``--out``; ``table_of(runs, coverage)`` is the table printed and written."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--runs", nargs="+", required=True, help="NAME=CSV of whatif_accuracy.py --model runs")
    parser.add_argument("--coverage", type=float, default=0.9, help="coverage of targeted sets to reach")
    parser.add_argument("--out", type=Path, help="CSV of the evaluation rows")
    args = parser.parse_args()
    runs = {}
    for item in args.runs:
        name, _, path = item.partition("=")
        runs[name] = pd.read_csv(path)
    table = table_of(runs, args.coverage)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if args.out:
        write_text(table.to_csv(index=False, float_format="%.4f"), str(args.out))


def main() -> None:
    cli(__doc__.splitlines()[0],
        lambda runs, coverage: evaluate({name: targeted_rows(run) for name, run in runs.items()}, coverage))


if __name__ == "__main__":
    main()
