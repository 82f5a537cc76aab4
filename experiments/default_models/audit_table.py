"""The one-retrain prediction audit of several models side by side (issue 24/25): how far the Newton step is off.

``kgbias prepare`` audits every default model with one masked retrain (:mod:`kgbias_core.tasks.prediction_audit`:
the top share of the triples that move B_gr of the occupation with the largest rarer gender, predicted by the Newton
step on |H|, then retrained; until 2026-11-29 the largest occupation with 5 of each gender). This reads each model's
stored audit and writes one row per model with its training settings and the ratio retrained / predicted: the step
scale every later prediction of that model is multiplied by; where the model stores a refit audit (eight negatives),
``refined`` and ``refined_ratio``: the refined prediction of the same set and its scale.

    python experiments/default_models/audit_table.py --models cached_models/fb15k237-transe ... --out CSV
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from kgbias_core.commands.common import write_text
from kgbias_core.embeddings.store import read_config
from kgbias_core.tasks.prediction_audit import saved_refit_audit
from kgbias_core.whatif.step_ratio import saved_prediction_audit


def audit_row(model_dir: Path) -> dict:
    """The model's stored audit (one row), its negatives per triple, the ratio retrained / predicted, and the refit
    audit's where stored."""
    audit = saved_prediction_audit(model_dir)
    if audit is None or audit.empty:
        sys.exit(f"error: {model_dir} has no prediction audit: kgbias prepare (or the sidebar) makes it")
    row = audit.iloc[0].to_dict()
    config = read_config(model_dir)
    refit = saved_refit_audit(model_dir, audit)
    refined = {} if refit is None else {"refined": float(refit["refined"].iloc[0]),
                                        "refined_ratio": float(refit["ratio"].iloc[0])}
    return {"model": model_dir.name, "negatives": int(config.get("negatives_per_triple") or 1), **row,
            "ratio": float(row["retrained"]) / float(row["predicted"]), **refined}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    frame = pd.DataFrame([audit_row(path) for path in args.models])
    write_text(frame.to_csv(index=False, float_format="%.4f"), str(args.out))
    print(frame.to_string(index=False))


if __name__ == "__main__":
    main()
