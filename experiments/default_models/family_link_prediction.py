"""Link prediction of trained models (issue 24, part 1): filtered MRR and Hits@1/3/10, heads, tails and both.

Reads each model's cached link prediction (:func:`kgbias_core.evaluation.link_prediction.cached_link_prediction`:
realistic filtered ranks on the test split, computed and cached beside the model when missing) and writes one
row per model and side with the training settings that matter for it; ``OUT_summary.csv`` gives per training
config (the seed aside) the mean over the models and the seed range (max - min) of MRR and Hits@10 on both
sides pooled: a seed family's band.

    nice python experiments/default_models/family_link_prediction.py \
        --models cached_models/fb15k237-transe cached_models/fb15k237-transe-s1 cached_models/fb15k237-transe-s2 \
        --out experiments/default_models/results/fb15k237_default_family_lp.csv [--threads 1] [--device cpu]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import pandas as pd
import torch

from kgbias_core.embeddings.store import read_config
from kgbias_core.evaluation.link_prediction import cached_link_prediction

#: The training settings a row names (config.json keys); the summary groups by all of them but the seed. A model
#: saved before ``distance`` was a setting has none in its config: its column stays empty, and the summary leaves
#: out a setting no model has.
SETTINGS = ("dataset", "model", "dim", "epochs", "margin", "l2", "lr", "batch_size", "negatives_per_triple",
            "distance")


def model_rows(model_dir: Path, *, device: str) -> pd.DataFrame:
    """One model's link prediction, one row per side, with its settings and seed."""
    config = read_config(model_dir)
    started = time.perf_counter()
    frame = cached_link_prediction(model_dir, device=device)
    seconds = time.perf_counter() - started
    settings = {key: config.get(key) for key in SETTINGS}
    return frame.assign(model_name=model_dir.name, seed=config.get("seed"), **settings,
                        train_s=config.get("train_seconds"), lp_s=round(seconds, 1))


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Per training config (the seed aside), every test triple, both sides pooled: mean and seed range of MRR
    and Hits@10."""
    both = frame[(frame["side"] == "both") & (frame["queries"] == "all")]
    keys = [key for key in SETTINGS if both[key].notna().any()]
    grouped = both.groupby(keys, dropna=False)
    return grouped.agg(seeds=("seed", "nunique"), mrr=("mrr", "mean"), mrr_min=("mrr", "min"),
                       mrr_max=("mrr", "max"), hits10=("hits@10", "mean"), hits10_min=("hits@10", "min"),
                       hits10_max=("hits@10", "max"), hits1=("hits@1", "mean")).reset_index()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"load average before: {os.getloadavg()[0]:.2f}; {args.threads} torch thread(s)", flush=True)
    frame = pd.concat([model_rows(path, device=args.device) for path in args.models], ignore_index=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(args.out, index=False)
    result = summary(frame)
    result.to_csv(args.out.with_name(args.out.stem + "_summary.csv"), index=False)
    print(frame[["model_name", "queries", "side", "mrr", "hits@1", "hits@3", "hits@10"]].to_string(index=False))
    print(result.to_string(index=False))


if __name__ == "__main__":
    main()
