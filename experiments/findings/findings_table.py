"""Du et al.'s claims, the paper's figures and each model's, side by side (as docs/generate.py renders them).

    python experiments/findings/findings_table.py \
        experiments/findings/results/findings_fb15k237.json experiments/findings/results/fb13_findings_l2_80_e160.json

Reads the JSON files written by ``kgbias findings`` and prints one Markdown table (a column per model).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from kgbias_core.findings import side_by_side


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args()
    tables = {}
    for path in args.files:
        document = json.loads(path.read_text(encoding="utf-8"))
        tables[document["model"]] = pd.DataFrame(document["findings"]).fillna({"p_value": float("nan")})
    table = side_by_side(tables)
    print("| " + " | ".join(table.columns) + " |")
    print("|" + "---|" * len(table.columns))
    for row in table.itertuples(index=False):
        print("| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |")


if __name__ == "__main__":
    main()
