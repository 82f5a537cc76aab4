"""validate influence, validate census: influence against retraining, measures against the census."""

from __future__ import annotations

import argparse
from pathlib import Path

from kgbias_core.commands.common import (
    PrintedProgress,
    csv_out,
    integer,
    load_analysis,
    write_csv,
)
from kgbias_core.errors import DataError


def _validate_influence(args: argparse.Namespace) -> None:
    from kgbias_core.influence.retraining_check import summarize_accuracy
    from kgbias_core.tasks import influence_accuracy_task

    task = influence_accuracy_task(Path(args.model), occupation=args.occupation, ks=args.ks, kinds=args.kinds,
                                   keep=False, device=args.device)
    runs = task.run(PrintedProgress())
    summary = summarize_accuracy(runs)
    write_csv(runs, args.out)
    print(f"Pearson r {summary.r:.3f} (p {summary.p_value:.2g}), random-removal noise {summary.noise:.4f}, "
          f"scale actual/predicted {summary.scale:.3f}, sign agreement {summary.sign_agreement:.0%}")


def _validate_census(args: argparse.Namespace) -> None:
    from kgbias_core.data.census import census_file, census_validation
    from kgbias_core.data.datasets import resolve_data_dir
    from kgbias_core.errors import CENSUS_FILE_MISSING, CENSUS_NOT_PAIRED, MeasureError
    from kgbias_core.tables import measures_table

    data_dir = resolve_data_dir(args.data_dir)
    census = census_file(data_dir)
    if not census.is_file():
        raise DataError(CENSUS_FILE_MISSING.format(path=census, data_dir=data_dir))
    analysis = load_analysis(args.model, device=args.device)
    correlations, joined = census_validation(measures_table(analysis), census_path=census, year=args.year,
                                             min_per_gender=args.min_per_gender, dataset=analysis.model.dataset)
    if joined.empty:
        raise MeasureError(CENSUS_NOT_PAIRED.format(model=analysis.model.name, dataset=analysis.model.dataset))
    write_csv(correlations, args.out)
    for row in correlations.itertuples():
        print(f"{row.measure}: r {row.r:+.3f} (p {row.p_value:.2g}, n {row.n})")


def register(commands: argparse._SubParsersAction) -> None:
    """Add validate influence, validate census to the command line."""
    validate = commands.add_parser("validate", help="influence against retraining (Du §4.2) or the census (§4.1)")
    checks = validate.add_subparsers(dest="check", required=True)
    accuracy = checks.add_parser("influence", help="predicted vs actual change of B_gr after top/bottom/random-k")
    accuracy.add_argument("--model", required=True)
    accuracy.add_argument("--occupation", required=True)
    accuracy.add_argument("--ks", type=integer(1), nargs="+", required=True, help="numbers of triples to remove")
    accuracy.add_argument("--kinds", nargs="+", choices=("top", "bottom", "random"),
                          default=["top", "bottom", "random"])
    accuracy.add_argument("--out", required=True, type=csv_out, help="CSV of the runs: kind, k, predicted, actual")
    accuracy.set_defaults(handler=_validate_influence)
    census = checks.add_parser("census", help="Pearson r of each measure against census log(p/(1-p))")
    census.add_argument("--model", required=True)
    census.add_argument("--year", type=integer(1000, 9999), help="census year (default: the latest in the file)")
    census.add_argument("--data-dir", help="data directory with census/ (default: $KGBIAS_DATA_DIR or ./data)")
    census.add_argument("--min-per-gender", type=integer(1), default=1)
    census.add_argument("--out", required=True, type=csv_out, help="CSV: measure, r, p_value, n")
    census.set_defaults(handler=_validate_census)
