"""How far B_gr moves when the training objective changes, in units of each family's seed band (issue 24).

The same graph, seeds and settings, trained with one frozen negative per triple and with eight, give two seed
families (``kgbias prepare`` before and after FB15k-237's default moved to eight). Per occupation with at least
``--minimum`` men and women: each family's B_gr (the seed-0 model), its seed band (min, max over the members),
the shift of the seed-0 B_gr between the families, and whether the two bands are apart (no overlap) and whether
they lean opposite ways (each band excludes 0, on different sides). A shift larger than either band is a change
the seed alone does not make: the objective's own part of a B_gr figure.

    python experiments/default_models/objective_shift.py --a cached_models/fb15k237-transe-k1 \
        --b cached_models/fb15k237-transe --out experiments/default_models/results/fb15k237_objective_shift.csv

``--a`` and ``--b`` are first members of two families (``kgbias train --seeds`` or ``prepare``) of one data set.
Columns: occupation, name, n_male, n_female, then per family (a, b) group_bias, seed_min, seed_max; shift (b - a),
shift_in_range (|shift| over the wider of the two seed ranges), apart, opposite. A one-line summary is printed
and written to ``OUT_summary.csv`` (``--summarize-only`` rewrites it from the table at ``--out``, no model read).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.commands.common import write_text
from kgbias_core.embeddings.store import load_model, read_config
from kgbias_core.families import family_seed_band
from kgbias_core.tables import MIN_GROUP_SIZE, measures_table


def family_frame(first: Path) -> pd.DataFrame:
    """The first member's measures with its family's B_gr seed band beside them."""
    band = family_seed_band(first)
    if band is None:
        sys.exit(f"error: {first} belongs to no seed family: train one with kgbias train --seeds 3")
    measures = measures_table(ModelAnalysis(load_model(first)))
    keep = ["occupation", "name", "n_male", "n_female", "group_bias"]
    return measures[keep].merge(band[["occupation", "group_bias_seed_min", "group_bias_seed_max"]], on="occupation")


def shift_table(a: pd.DataFrame, b: pd.DataFrame, *, minimum: int = MIN_GROUP_SIZE) -> pd.DataFrame:
    """Per occupation in both (:func:`family_frame` each) with at least ``minimum`` men and women: the two B_gr,
    their bands, the shift and how it compares with the bands. Sorted by |shift| in band units, largest first."""
    both = a.merge(b.drop(columns=["name", "n_male", "n_female"]), on="occupation", suffixes=("_a", "_b"))
    both = both[both[["n_male", "n_female"]].min(axis=1) >= minimum]
    frame = pd.DataFrame({"occupation": both["occupation"], "name": both["name"], "n_male": both["n_male"],
                          "n_female": both["n_female"]})
    for side in ("a", "b"):
        frame[f"group_bias_{side}"] = both[f"group_bias_{side}"]
        frame[f"seed_min_{side}"] = both[f"group_bias_seed_min_{side}"]
        frame[f"seed_max_{side}"] = both[f"group_bias_seed_max_{side}"]
    frame["shift"] = frame["group_bias_b"] - frame["group_bias_a"]
    wider = np.maximum(frame["seed_max_a"] - frame["seed_min_a"], frame["seed_max_b"] - frame["seed_min_b"])
    frame["shift_in_range"] = frame["shift"].abs() / wider
    frame["apart"] = (frame["seed_min_b"] > frame["seed_max_a"]) | (frame["seed_max_b"] < frame["seed_min_a"])
    lean_a = np.where(frame["seed_min_a"] > 0, 1, np.where(frame["seed_max_a"] < 0, -1, 0))
    lean_b = np.where(frame["seed_min_b"] > 0, 1, np.where(frame["seed_max_b"] < 0, -1, 0))
    frame["opposite"] = lean_a * lean_b < 0
    return frame.sort_values("shift_in_range", ascending=False, ignore_index=True)


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """How many occupations, how many with the bands apart or leaning opposite ways, the median and max shift,
    and each family's median seed band (max - min over its seeds): how much its seeds alone move a B_gr."""
    return pd.DataFrame([{
        "occupations": len(frame), "apart": int(frame["apart"].sum()), "opposite": int(frame["opposite"].sum()),
        "shift_abs_median": float(frame["shift"].abs().median()), "shift_abs_max": float(frame["shift"].abs().max()),
        "shift_in_range_median": float(frame["shift_in_range"].median()),
        **{f"band_median_{side}": float((frame[f"seed_max_{side}"] - frame[f"seed_min_{side}"]).median())
           for side in ("a", "b")},
    }])


def write_summary(frame: pd.DataFrame, out: Path) -> None:
    """``OUT_summary.csv`` beside the table ``out``, and printed."""
    result = summary(frame)
    write_text(result.to_csv(index=False, float_format="%.4f"), str(out.with_name(out.stem + "_summary.csv")))
    print(result.to_string(index=False))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--a", type=Path, help="first member of one family (e.g. one negative)")
    parser.add_argument("--b", type=Path, help="first member of the other (e.g. eight negatives)")
    parser.add_argument("--minimum", type=int, default=MIN_GROUP_SIZE, help="men and women an occupation needs")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--summarize-only", action="store_true",
                        help="only write OUT_summary.csv from the table already at OUT (no model read)")
    args = parser.parse_args(argv)
    if args.summarize_only:
        if not args.out.is_file():
            sys.exit(f"error: {args.out} does not exist: write it first with --a and --b")
        write_summary(pd.read_csv(args.out), args.out)
        return 0
    if args.a is None or args.b is None:
        parser.error("--a and --b are required (or --summarize-only)")
    ca, cb = read_config(args.a), read_config(args.b)
    if ca.get("data_hash") != cb.get("data_hash"):
        sys.exit(f"error: {args.a} and {args.b} were trained on different data (data_hash differs)")
    frame = shift_table(family_frame(args.a), family_frame(args.b), minimum=args.minimum)
    write_text(frame.to_csv(index=False, float_format="%.4f"), str(args.out))
    write_summary(frame, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
