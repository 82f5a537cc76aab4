"""The MRR drop of verified plans, heads and tails pooled (issue 29's bar: MRR drop <= 0.01 absolute).

Until 2026-11-27 evening the record of verified plans took the first "all" row of each model's cached link
prediction as its MRR: the head side, not the pooled figure a model is quoted by (``headline``). This reads every
verified plan of the given result files again from the cached tables (no retrain, no ranking: each run's link
prediction was computed when it was verified) and writes the pooled MRR before and after, and the drop.

    python experiments/plan_verification/pooled_mrr.py --store STORE --base fb15k237-transe \
        --plans experiments/plan_verification/results/fb15k237_k8_plans*.csv --out OUT.csv
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from kgbias_core.commands.common import write_text
from kgbias_core.evaluation.link_prediction import headline, load_link_prediction


def pooled(model_dir: Path) -> tuple[float, float]:
    """(pooled MRR, head-side MRR) of a model's cached link prediction."""
    table = load_link_prediction(model_dir)
    if table is None:
        raise SystemExit(f"{model_dir}: no cached link prediction")
    head = table[(table["queries"] == "all") & (table["side"] == "head")]["mrr"]
    return headline(table)["mrr"], float(head.iloc[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True, type=Path, help="the model store holding the base and its runs")
    parser.add_argument("--base", required=True, help="the base model's name")
    parser.add_argument("--plans", nargs="+", required=True, type=Path, help="plan_verification.py result files")
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    before, before_head = pooled(args.store / args.base)
    rows = []
    for path in args.plans:
        for row in pd.read_csv(path).itertuples(index=False):
            if not isinstance(row.run, str):  # a plan that removed nothing: no run
                continue
            after, after_head = pooled(args.store / row.run)
            rows.append({"file": path.name, "name": row.name, "run": row.run, "k": int(row.k),
                         "mrr_before": before, "mrr_after": after, "mrr_drop": before - after,
                         "mrr_drop_head_side": before_head - after_head,
                         "recorded_mrr_drop": float(row.mrr_before) - float(row.mrr_after)})
    frame = pd.DataFrame(rows)
    write_text(frame.to_csv(index=False), str(args.out))
    print(frame.to_string(index=False))
    print(f"{len(frame)} verified plans: pooled MRR drop at most {frame['mrr_drop'].max():.4f}")


if __name__ == "__main__":
    main()
