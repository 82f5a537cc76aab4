"""Cross-machine drift of B_gr in units of the seed band (issue 24).

Two models of one config and data (say one trained on this CPU, one on a GPU or another machine) should give
the same B_gr; float rounding makes them siblings rather than copies. This script measures how far apart they
are per occupation, and puts that drift beside the spread the training's own seed causes: the seed band of a
family of the same config (:mod:`kgbias_core.families`). A drift well inside the band means the machine
matters less than the seed; a drift of several band widths would mean a figure depends on where it was made.

    python experiments/drift/drift.py --a DIR --b DIR [--family MEMBER_DIR] [--minimum 5] --out CSV

``--reference CSV`` instead of ``--b``: B_gr of the same config measured on another machine whose model is not
at hand, as committed result files give it (columns ``name`` and ``group_bias``, one row per occupation, names
as the measures table gives them); only those occupations are compared, and the reference's rounding (3
decimals in the README's tables: +-0.0005) bounds the smallest drift it can show.

``--family``: a member of the family whose band is the unit (default: ``--a``'s family). The two models must
share data hash and config (checked); ``--other-seed`` allows models that differ only in seed, as a stand-in
where no second machine is at hand (the drift then *is* a seed change, and reads about 1 band).

Columns: occupation, name, n_male, n_female, group_bias_a, group_bias_b, drift (b - a), seed_std,
seed_range (max - min over the family), drift_in_std (|drift| / seed_std), drift_in_range (|drift| / range).
A summary (median and max of drift_in_std, share of occupations within one std) is printed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embeddings.store import load_model, read_config
from kgbias_core.families import family_seed_band
from kgbias_core.tables import MIN_GROUP_SIZE, measures_table

COLUMNS = ("occupation", "name", "n_male", "n_female", "group_bias_a", "group_bias_b", "drift", "seed_std",
           "seed_range", "drift_in_std", "drift_in_range")


def drift_table(a: pd.DataFrame, b: pd.DataFrame, band: pd.DataFrame, *, minimum: int = MIN_GROUP_SIZE
                ) -> pd.DataFrame:
    """Per occupation with at least ``minimum`` men and women in both models: B_gr of ``a`` and ``b`` (two
    :func:`~kgbias_core.tables.measures_table`), their drift b - a, and |drift| in units of the family's seed
    std and seed range (``band``: :func:`~kgbias_core.families.seed_band`). Sorted by drift_in_std, largest
    first."""
    keep = ["occupation", "name", "n_male", "n_female", "group_bias"]
    both = a[keep].merge(b[["occupation", "n_male", "n_female", "group_bias"]], on="occupation",
                         suffixes=("_a", "_b"))
    both = both.merge(band[["occupation", "group_bias_seed_std", "group_bias_seed_min", "group_bias_seed_max"]],
                      on="occupation", how="left")
    enough = both[["n_male_a", "n_female_a", "n_male_b", "n_female_b"]].min(axis=1) >= minimum
    both = both[enough].copy()
    frame = pd.DataFrame({
        "occupation": both["occupation"], "name": both["name"], "n_male": both["n_male_a"],
        "n_female": both["n_female_a"], "group_bias_a": both["group_bias_a"], "group_bias_b": both["group_bias_b"],
        "drift": both["group_bias_b"] - both["group_bias_a"], "seed_std": both["group_bias_seed_std"],
        "seed_range": both["group_bias_seed_max"] - both["group_bias_seed_min"],
    })
    frame["drift_in_std"] = frame["drift"].abs() / frame["seed_std"]
    frame["drift_in_range"] = frame["drift"].abs() / frame["seed_range"]
    return frame.sort_values("drift_in_std", ascending=False, ignore_index=True)[list(COLUMNS)]


def reference_table(measured: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``measured`` (a :func:`~kgbias_core.tables.measures_table`) named in ``reference`` (columns
    ``name``, ``group_bias``), their B_gr replaced by the reference's: the second model of :func:`drift_table`."""
    missing = set(reference["name"]) - set(measured["name"])
    if missing:
        sys.exit(f"error: the reference names occupations the model does not have: {', '.join(sorted(missing))}")
    figures = reference.set_index("name")["group_bias"].astype(float)
    rows = measured[measured["name"].isin(figures.index)].copy()
    rows["group_bias"] = rows["name"].map(figures)
    return rows


def summary(frame: pd.DataFrame) -> str:
    """One line: how many occupations, the median and max |drift| and drift in seed-std units."""
    units = frame["drift_in_std"].dropna()
    if units.empty:
        return f"{len(frame)} occupations; no seed band to compare with"
    return (f"{len(frame)} occupations: |drift| median {frame['drift'].abs().median():.4f}, "
            f"max {frame['drift'].abs().max():.4f}; in seed std: median {units.median():.2f}, max {units.max():.2f}; "
            f"within 1 std: {(units <= 1).mean():.0%}")


def _check_same_config(a: Path, b: Path, *, other_seed: bool) -> None:
    ca, cb = read_config(a), read_config(b)
    if ca.get("data_hash") != cb.get("data_hash"):
        sys.exit(f"error: {a} and {b} were trained on different data (data_hash differs)")
    keys = ("model", "dim", "epochs", "batch_size", "lr", "lr_min", "margin", "l2", "distance", "edit",
            *(() if other_seed else ("seed",)))
    differ = [k for k in keys if ca.get(k) != cb.get(k)]
    if differ:
        sys.exit(f"error: {a} and {b} differ in {', '.join(differ)}: not one config"
                 + ("" if other_seed or differ != ["seed"] else " (--other-seed compares two seeds)"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--a", required=True, help="model directory (e.g. trained on this CPU)")
    second = parser.add_mutually_exclusive_group(required=True)
    second.add_argument("--b", help="model directory of the same config (e.g. trained on a GPU)")
    second.add_argument("--reference", help="CSV (name, group_bias) of the same config from another machine")
    parser.add_argument("--family", help="a member of the family whose seed band is the unit (default: --a)")
    parser.add_argument("--minimum", type=int, default=MIN_GROUP_SIZE, help="men and women an occupation needs")
    parser.add_argument("--other-seed", action="store_true", help="allow --a and --b to differ in seed (stand-in)")
    parser.add_argument("--out", required=True, help="CSV to write")
    args = parser.parse_args(argv)
    a = Path(args.a)
    band = family_seed_band(args.family or a)
    if band is None:
        sys.exit(f"error: {args.family or a} belongs to no seed family: train one with kgbias train --seeds 3")
    measured = measures_table(ModelAnalysis(load_model(a)))
    if args.reference:
        other = reference_table(measured, pd.read_csv(args.reference))
        second_name, second_device = Path(args.reference).name, "reference"
    else:
        b = Path(args.b)
        _check_same_config(a, b, other_seed=args.other_seed)
        other = measures_table(ModelAnalysis(load_model(b)))
        second_name, second_device = b.name, read_config(b).get("device", "?")
    table = drift_table(measured, other, band, minimum=args.minimum)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(out, index=False, float_format="%.6g")
    print(f"{a.name} ({read_config(a).get('device', '?')}) against {second_name} ({second_device}); band of family "
          f"{read_config(args.family or a)['family']['name']} over {int(band['n_seeds'].max())} seeds")
    print(summary(table))
    print(f"wrote {len(table)} rows to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
