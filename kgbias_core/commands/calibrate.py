"""calibrate: the influence scale fitted by masked retraining and stored in the model."""

from __future__ import annotations

import argparse
from pathlib import Path

from kgbias_core.commands.common import (
    PrintedProgress,
    csv_out,
    integer,
    write_csv,
)


def _calibrate(args: argparse.Namespace) -> None:
    """The calibration task (as the lab's button runs it): it refuses retrains too long for this machine
    before loading the model, and a --k above the triple count before the first retrain."""
    from kgbias_core.embeddings.store import check_writable
    from kgbias_core.influence.calibration import leave_one_out
    from kgbias_core.tasks import calibration_task, saved_calibration_runs

    check_writable(Path(args.model).parent, what="calibrate (stores the calibrated model there)")
    task = calibration_task(args.model, n_occupations=args.occupations, k=args.k, device=args.device)
    calibration = task.run(PrintedProgress())
    runs = saved_calibration_runs(args.model)
    held_out = leave_one_out(runs)
    if args.out is not None:
        write_csv(held_out, args.out)
    for label, scale in zip(calibration.occupations, calibration.per_occupation, strict=True):
        name = runs.loc[runs["occupation"] == label, "name"].iloc[0]
        print(f"{name} ({label}): scale {scale:.3f}")
    print(f"scale actual/predicted {calibration.scale:.3f}, range {calibration.low:.3f}-{calibration.high:.3f} "
          f"over {len(calibration.occupations)} occupations; stored in {args.model}")
    print(f"leave-one-occupation-out: {int(held_out['inside'].sum())} of {len(held_out)} retrained changes "
          f"inside the interval ({held_out['inside'].mean():.0%})")


def register(commands: argparse._SubParsersAction) -> None:
    """Add calibrate to the command line."""
    calibration = commands.add_parser(
        "calibrate", help="fit the influence scale and its range over occupations by masked retraining; store it")
    calibration.add_argument("--model", required=True, help="TransE model directory (its calibration is replaced)")
    calibration.add_argument("--occupations", type=integer(3, 100), default=6,
                             help="occupations fitted on, spread over B_gr and group size (1 + 2n retrains)")
    calibration.add_argument("--k", type=integer(1),
                             help="triples removed per set (default: 1%% of those moving B_gr)")
    calibration.add_argument("--out", type=csv_out, help="CSV of the runs with their leave-one-out intervals")
    calibration.set_defaults(handler=_calibrate)
