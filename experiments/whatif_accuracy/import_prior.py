"""A prior scale for the step on imported models (issue 25): fitted on graphs trained here and predicted as imports,
judged on a graph it never saw.

No retrain can audit an import, so the lab cannot scale its step by the model's own ratio. Where graphs predicted as
imports agree on the ratio's level (retrained / step), a prior scale takes that level out: the step times S, with
the band [p / f, p * f], f = a + b / sqrt(m), fitted at S (band_fit.py's narrowest pair covering ``--coverage`` of
the pooled targeted sets). Both are fitted the way a new import meets them:

- ``S`` is the median, over graphs, of each graph's median ratio (each graph counts once, however many sets it has:
  the synthetic proxies hold 48 sets each, a real graph's bench far fewer);
- ``held out G``: S and the band fitted on every other graph, judged on G's sets (what a new graph sees);
- ``all -> G``: the pooled S and band (the constants the lab would use), on G's sets;
- ``as now -> G``: the band the lab shows today (:data:`~kgbias_core.influence.prediction.REDRAWN_BANDS`) at the
  prior the lab uses today (:data:`~kgbias_core.influence.prediction.REDRAWN_SCALES`, 1 where none);
- ``before -> G`` (``--before S,A,B``): a scale and band the lab showed before;
- ``judged G`` (``--judge NAME=OUT.csv``): a graph's sets that no fit saw, judged by the lab's constants (and
  ``--before``'s) alone.

    python experiments/whatif_accuracy/import_prior.py --distance l1 \
        --graphs synthetic7=results/local_refit_read_synthetic_k8_e100_l1_imported8.csv fb13=... \
        [--before 1,1.95,1.45] --out results/import_prior_l1.csv

Reads ``local_refit.py --as-imported`` outputs (columns ``newton`` and ``actual``); an import has no audit, so every
targeted set counts (none is left out as an audited one). Random sets are not fitted on.
"""

from __future__ import annotations

import argparse

import band_fit
import numpy as np
import pandas as pd

from kgbias_core.commands.common import write_text
from kgbias_core.influence.prediction import REDRAWN_BANDS, REDRAWN_SCALES


def graph_rows(path: str) -> pd.DataFrame:
    """The targeted sets of one ``local_refit.py --as-imported`` output, with m (band_fit.py's rows)."""
    return band_fit.targeted_rows(pd.read_csv(path).assign(in_audit=False))


def prior_scale(graphs: dict[str, pd.DataFrame]) -> float:
    """The median over ``graphs`` of each graph's median retrained / step ratio (module docstring)."""
    return float(np.median([(rows["actual"] / rows["newton"]).median() for rows in graphs.values()]))


def at_scale(rows: pd.DataFrame, scale: float) -> pd.DataFrame:
    """``rows`` as band_fit.py judges them: the step times ``scale``, no noise floor (an import has no noise band)."""
    return rows.assign(scaled=rows["newton"] * scale, floor=0.0)


def judged_row(evaluation: str, graph: str, rows: pd.DataFrame, scale: float, a: float, b: float) -> dict:
    """One evaluation: ``rows`` (one graph's targeted sets) at ``scale`` judged by the band (a, b): sets covered,
    coverage, median half-width / point, and the share whose retrained change has the step's sign."""
    covered, width = band_fit.judged(at_scale(rows, scale), a, b)
    ratio = rows["actual"] / rows["newton"]
    return {"evaluation": evaluation, "graph": graph, "sets": len(rows), "median_ratio": ratio.median(),
            "scale": scale, "a": a, "b": b, "covered": int(covered.sum()), "coverage": covered.mean(),
            "half_width": float(np.median(width)), "sign_right": float((ratio > 0).mean())}


def prior_frame(graphs: dict[str, pd.DataFrame], coverage: float, *, distance: str,
                before: tuple[float, float, float] | None = None,
                judge: dict[str, pd.DataFrame] | None = None) -> pd.DataFrame:
    """One row per graph and evaluation (module docstring): S, the band (a, b), sets covered, median half-width.
    ``before``: (S, a, b) the lab showed before, judged the same way; ``judge``: graphs judged, not fitted on."""
    out = []

    def row(*args) -> None:
        out.append(judged_row(*args))

    scale = prior_scale(graphs)
    pooled = pd.concat(graphs.values(), ignore_index=True)
    a, b = band_fit.fit(at_scale(pooled, scale), coverage)
    now_scale, (now_a, now_b) = REDRAWN_SCALES.get(distance, 1.0), REDRAWN_BANDS[distance]
    for graph, rows in graphs.items():
        rest = {other: frame for other, frame in graphs.items() if other != graph}
        held_scale = prior_scale(rest)
        held_a, held_b = band_fit.fit(at_scale(pd.concat(rest.values(), ignore_index=True), held_scale), coverage)
        row(f"held out {graph}", graph, rows, held_scale, held_a, held_b)
        row(f"all -> {graph}", graph, rows, scale, a, b)
        row(f"as now -> {graph}", graph, rows, now_scale, now_a, now_b)
        if before is not None:
            row(f"before -> {graph}", graph, rows, *before)
    for graph, rows in (judge or {}).items():
        row(f"judged {graph}, as now", graph, rows, now_scale, now_a, now_b)
        if before is not None:
            row(f"judged {graph}, before", graph, rows, *before)
    row("all -> all", "all", pooled, scale, a, b)
    row("as now -> all", "all", pooled, now_scale, now_a, now_b)
    if before is not None:
        row("before -> all", "all", pooled, *before)
    return pd.DataFrame(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--distance", required=True, choices=sorted(REDRAWN_BANDS))
    parser.add_argument("--graphs", nargs="+", required=True, metavar="NAME=OUT.csv")
    parser.add_argument("--coverage", type=float, default=0.9)
    parser.add_argument("--before", metavar="S,A,B", help="a prior scale and band the lab showed before, judged too")
    parser.add_argument("--judge", nargs="*", default=[], metavar="NAME=OUT.csv",
                        help="graphs' sets judged by the lab's constants, not fitted on")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    before = tuple(float(x) for x in args.before.split(",")) if args.before else None
    graphs = {}
    for item in args.graphs:
        name, _, path = item.partition("=")
        graphs[name] = graph_rows(path)
    judge = {name: graph_rows(path) for name, _, path in (item.partition("=") for item in args.judge)}
    frame = prior_frame(graphs, args.coverage, distance=args.distance, before=before, judge=judge)
    print(frame.round(3).to_string(index=False))
    write_text(frame.to_csv(index=False, float_format="%.4f"), args.out)


if __name__ == "__main__":
    main()
