"""The lab's removal bands on L1, L2 and imported models, in one table (issue 25): rows of ``local_refit.py --bands``.

Each ``local_refit.py --bands`` file holds, per estimator, band_fit.py's fit in-sample, with each occupation held
out and from graph to graph, and the band the lab shows (``lab band -> ...``). This script keeps, of each file
named ``CASE=FILE``, the pooled rows (``... all``; a file of one graph: that graph's rows) of the fit in-sample,
held out by occupation, and of the lab's band, and writes them as one table, a case a block; ``--before`` files
(the same sets judged by the band the lab showed before a change) add their lab rows to the case of their name:

    python experiments/whatif_accuracy/distance_bands.py \
        'L1=results/local_refit_bands_synthetic_k8_e100_l1.csv' ... \
        --before 'L1=results/local_refit_bands_synthetic_k8_e100_l1_before.csv' ... --out results/distance_bands.csv
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from kgbias_core.commands.common import write_text

#: The evaluations kept, by their start: the fit in-sample, held out by occupation, and the lab's band.
KEPT = ("in-sample", "leave-one-out", "lab band ->")
COLUMNS = ["case", "estimator", "evaluation", "sets", "coverage", "half_width", "half_width_large", "a", "b"]


def pooled_rows(bands: pd.DataFrame) -> pd.DataFrame:
    """The rows of one ``--bands`` file that judge all its sets at once: ``... all`` where the file pools several
    graphs, else its one graph's; only the evaluations of :data:`KEPT`, and the lab's band of the step alone."""
    kept = bands[bands["evaluation"].str.startswith(KEPT)]
    # the lab shows the step on these models (the refined prediction is squared-L2 only): its band's rows alone
    kept = kept[~kept["evaluation"].str.startswith("lab band") | (kept["estimator"] == "newton")]
    pooled = kept[kept["evaluation"].str.endswith(" all")]
    if (pooled["evaluation"] == "in-sample all").any():  # several graphs: the pooled fit is there
        return pooled
    return kept[~kept["evaluation"].str.endswith(" all")]


def distance_table(cases: dict[str, pd.DataFrame], before: dict[str, pd.DataFrame] | None = None) -> pd.DataFrame:
    """:func:`pooled_rows` of each case, named, in the order given; of each ``before`` case (the same sets judged by
    the band the lab showed before, ``local_refit.py --lab-step-band``) only its lab rows, as ``lab band before ->
    ...``, after the case of the same name (or at the end)."""
    blocks = {case: pooled_rows(bands).assign(case=case) for case, bands in cases.items()}
    for case, bands in (before or {}).items():
        rows = pooled_rows(bands)
        rows = rows[rows["evaluation"].str.startswith("lab band")].assign(
            case=case, evaluation=lambda f: f["evaluation"].str.replace("lab band", "lab band before", regex=False))
        blocks[case] = pd.concat([blocks[case], rows]) if case in blocks else rows
    return pd.concat(blocks.values(), ignore_index=True)[COLUMNS]


def _named(items: list[str]) -> dict[str, pd.DataFrame]:
    named = {}
    for item in items:
        case, _, path = item.rpartition("=")
        named[case or path] = pd.read_csv(path)
    return named


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="+", metavar="CASE=FILE")
    parser.add_argument("--before", nargs="*", default=[], metavar="CASE=FILE",
                        help="the same sets judged by the band the lab showed before: their lab rows only")
    parser.add_argument("--estimators", help="comma-separated: keep these estimators' rows only")
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    table = distance_table(_named(args.cases), _named(args.before))
    if args.estimators:
        table = table[table["estimator"].isin(args.estimators.split(","))]
    print(table.round(3).to_string(index=False))
    write_text(table.to_csv(index=False, float_format="%.4f"), str(args.out))


if __name__ == "__main__":
    main()
