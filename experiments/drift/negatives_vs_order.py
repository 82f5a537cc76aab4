"""What moves B_gr between seeds: the negatives, or the initialisation and batch order? (issue 24)

A seed sets three things: the initial embedding, the batch order and the frozen negatives. Two saved spreads of
one model separate them:

- the **noise band** (:func:`kgbias_core.whatif.runs.noise_band`): the model retrained under seeds 1, 2, 3 with
  its own negatives kept, so only the initialisation and the batch order change; spread = max - min over the
  model and the three retrains;
- the **family's seed band** (:func:`kgbias_core.families.family_group_bias_band`): members trained from their
  own seeds, negatives included; range = max - min over the members.

One row per occupation with at least ``--minimum`` men and women: both widths, their ratio, and the seed-0 B_gr.

    nice python experiments/drift/negatives_vs_order.py --model STORE/fb15k237-transe \\
        --out experiments/drift/results/fb15k237_k8_negatives_vs_order.csv
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embeddings.store import load_model
from kgbias_core.families import family_group_bias_band
from kgbias_core.tables import MIN_GROUP_SIZE
from kgbias_core.tasks import saved_noise_band


def widths(model: Path, *, minimum: int = MIN_GROUP_SIZE) -> pd.DataFrame:
    """Per occupation: ``noise_spread`` (negatives kept), ``seed_range`` (own negatives), ``ratio``."""
    noise, band = saved_noise_band(model), family_group_bias_band(model)
    if noise is None or band is None:
        raise SystemExit(f"error: {model} needs a saved noise band and a seed family (kgbias prepare makes both)")
    groups = ModelAnalysis(load_model(model)).groups
    frame = pd.DataFrame({"occupation": list(groups.labels), "name": list(groups.names),
                          "n_male": groups.n_male.tolist(), "n_female": groups.n_female.tolist()})
    frame = frame.merge(noise[["occupation", "base", "spread"]], on="occupation").merge(
        band[["occupation", "group_bias_seed_min", "group_bias_seed_max"]], on="occupation")
    frame = frame[(frame[["n_male", "n_female"]].min(axis=1) >= minimum) & frame["spread"].notna()]
    out = pd.DataFrame({"occupation": frame["occupation"], "name": frame["name"], "n_male": frame["n_male"],
                        "n_female": frame["n_female"], "group_bias": frame["base"],
                        "noise_spread": frame["spread"],
                        "seed_range": frame["group_bias_seed_max"] - frame["group_bias_seed_min"]})
    out["ratio"] = out["seed_range"] / out["noise_spread"]
    return out.sort_values("ratio", ascending=False, ignore_index=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, type=Path)
    parser.add_argument("--minimum", type=int, default=MIN_GROUP_SIZE)
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    frame = widths(args.model, minimum=args.minimum)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(args.out, index=False)
    print(f"{len(frame)} occupations: noise spread median {frame['noise_spread'].median():.4f}, seed range median "
          f"{frame['seed_range'].median():.4f}; seed range / noise spread median {frame['ratio'].median():.1f}, "
          f"min {frame['ratio'].min():.1f}, max {frame['ratio'].max():.1f}; seed range wider on "
          f"{int((frame['ratio'] > 1).sum())} of {len(frame)}")


if __name__ == "__main__":
    main()
