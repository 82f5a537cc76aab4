"""Du's closed form times its own audit ratio against the scaled Newton step, each with its own fitted band (issue 25).

The old estimator is Du's closed-form sum times the scale of a 13-retrain calibration. On the eight-negative
FB15k-237 default its point is about as well centred as the lab's scaled Newton step, and it is its narrow range
that misses (whatif.md). This asks whether the closed form's point would serve the lab: scaled, like the step, by the
retrained/predicted ratio of the model's one-retrain audit (the audited occupation's top 16% set), then given the
narrowest band f = a + b / sqrt(m) that covers ``--coverage`` of the targeted sets
(:func:`band_fit.evaluate`: in-sample, leave-one-occupation-out, graph to graph), beside the step fitted the same way.

    python experiments/whatif_accuracy/closed_form_band.py \\
        --runs cpu=results/fb15k237_k8_whatif_old.csv h200=results/fb15k237_k8_whatif_h200_old.csv \\
        --out results/closed_form_band.csv

Each run file must hold its audited occupation's top 16% set (``in_audit``); no retrain is run.
"""

from __future__ import annotations

import band_fit  # noqa: I001  (the band's fit, beside this file)
import pandas as pd

#: The two points compared: the lab's (the step times its audit ratio, as run) and the closed form times its own.
POINTS = ("scaled Newton step", "closed form x audit ratio")


def compared(graphs: dict[str, pd.DataFrame], coverage: float) -> pd.DataFrame:
    """:func:`band_fit.evaluate` for each point of :data:`POINTS`, with the closed form's audit ratio per graph."""
    tables = []
    for point in POINTS:
        rows, ratios = {}, {}
        for name, runs in graphs.items():
            targeted = band_fit.targeted_rows(runs)
            if point == POINTS[1]:
                ratios[name] = band_fit.audit_ratio(runs, "closed_form")
                targeted = targeted.assign(scaled=targeted["closed_form"] * ratios[name])
            rows[name] = targeted
        table = band_fit.evaluate(rows, coverage)
        table.insert(0, "point", point)
        table.insert(1, "ratio", [_ratio_of(evaluation, ratios) for evaluation in table["evaluation"]])
        tables.append(table)
    return pd.concat(tables, ignore_index=True)


def _ratio_of(evaluation: str, ratios: dict[str, float]) -> float:
    """The closed form's audit ratio of the graph an evaluation is judged on (NaN for the step, or pooled rows)."""
    target = evaluation.split()[-1]
    return ratios.get(target, float("nan"))


def main() -> None:
    band_fit.cli(__doc__.splitlines()[0], compared)


if __name__ == "__main__":
    main()
