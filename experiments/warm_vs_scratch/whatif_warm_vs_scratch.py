"""Warm-started what-ifs against faithful (scratch, masked) ones, in units of the noise band (issue 14).

    KGBIAS_DATA_DIR=../shared/data python experiments/warm_vs_scratch/whatif_warm_vs_scratch.py \
        [--model cached_models/fb15k237-transe] [--occupations Actor Screenwriter "Film Producer"]

For each occupation and edit (IF-REMOVE k = 50, 200, 800; Random-REMOVE k = 800) it retrains from
scratch (masked, the base seed: the faithful what-if) and runs each warm variant from the base
weights, then compares the change of B_gr of the target and of every other occupation with the
scratch change, divided by that occupation's noise band (spread of B_gr over the base and 3 other
seeds, cached beside the model). Variants:

- ``warm``: the old fast path, 5 epochs from the base weights at lr/10 with a fresh Adam;
- ``warm-tail``: the same at the end of the base's schedule (lr_min);
- ``*-paired``: the variant minus the same continuation of the *unedited* graph (the drift that
  any continuation adds, edit or not, cancels; the control is shared by all removals of a model).

Prints one row per (occupation, edit, variant) and a summary per variant; ``--csv`` keeps the rows.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.device import retrain_device
from kgbias_core.embeddings.store import load_model
from kgbias_core.embeddings.training import train_transe
from kgbias_core.measures.group_bias import group_bias
from kgbias_core.whatif.edits import make_edit
from kgbias_core.whatif.runs import noise_band

EDITS = (("if", 50), ("if", 200), ("if", 800), ("random", 800))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="cached_models/fb15k237-transe")
    parser.add_argument("--occupations", nargs="+", default=["Actor", "Screenwriter", "Film Producer"])
    parser.add_argument("--warm-epochs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--csv", default="experiments/warm_vs_scratch/out/warm_vs_scratch.csv")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = load_model(args.model)
    analysis = ModelAnalysis(model)
    groups = analysis.groups
    config = model.config
    print(f"{model.name}: |G| = {model.triples.shape[0]}, {config.epochs} epochs, torch threads {args.threads}")

    start = time.perf_counter()
    band = noise_band(model, model_dir=args.model)
    spread = torch.tensor(band["spread"].to_numpy(), dtype=torch.float32).clamp_min(1e-6)
    print(f"noise band (3 seeds): {time.perf_counter() - start:.0f} s; median spread "
          f"{float(spread[torch.isfinite(spread)].median()):.4f}")
    base = analysis.group_bias()

    def retrain(weights: torch.Tensor, *, init: bool, lr: float | None = None) -> torch.Tensor:
        run_config = config if not init else replace(config, epochs=args.warm_epochs, lr=lr)
        result = train_transe(
            triples=model.triples, negatives=model.negatives, n_entities=model.n_entities,
            n_relations=model.n_relations, config=run_config, weights=weights,
            init=(model.entity_embeddings, model.relation_embeddings) if init else None,
            device=retrain_device(model),
        )
        return group_bias(entity_embeddings=result.entity_embeddings,
                          relation_embeddings=result.relation_embeddings, groups=groups)

    lrs = {"warm": max(config.lr / 10, config.lr_min), "warm-tail": config.lr_min}
    ones = torch.ones(model.triples.shape[0])
    controls = {name: retrain(ones, init=True, lr=lr) for name, lr in lrs.items()}
    rows = []
    for occupation in args.occupations:
        index = groups.index(occupation)
        for strategy, k in EDITS:
            edit = make_edit(analysis, groups.labels[index], strategy=strategy, k=k)
            weights = ones.clone()
            weights[list(edit.removed)] = 0
            tick = time.perf_counter()
            changes = {"scratch": retrain(weights, init=False) - base}
            scratch_seconds = time.perf_counter() - tick
            for name, lr in lrs.items():
                warm = retrain(weights, init=True, lr=lr)
                changes[name] = warm - base
                changes[f"{name}-paired"] = warm - controls[name]
            # Occupations with a defined B_gr (both genders present) in the base and the band.
            others = torch.isfinite(spread) & torch.isfinite(base)
            others[index] = False
            for name, change in changes.items():
                units = (change - changes["scratch"]).abs() / spread
                rows.append({
                    "occupation": groups.names[index], "edit": f"{edit.strategy}", "variant": name,
                    "target_change": float(change[index]), "scratch_change": float(changes["scratch"][index]),
                    "band": float(spread[index]), "target_diff_bands": float(units[index]),
                    "collateral_max_bands": float(units[others].max()),
                    "collateral_median_bands": float(units[others].median()),
                    "collateral_within_band": float((units[others] <= 1).float().mean()),
                    "collateral_scratch_max": float(changes["scratch"][others].abs().max()),
                })
            print(f"{groups.names[index]:14s} {edit.strategy:24s} scratch {float(changes['scratch'][index]):+.4f} "
                  f"({scratch_seconds:.0f} s) " + "  ".join(
                      f"{n} {float(c[index]):+.4f}" for n, c in changes.items() if n != "scratch"), flush=True)
    frame = pd.DataFrame(rows)
    Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(args.csv, index=False)
    warm = frame[frame["variant"] != "scratch"]
    summary = warm.groupby("variant", sort=False).agg(
        target_max_bands=("target_diff_bands", "max"),
        target_median_bands=("target_diff_bands", "median"),
        target_within=("target_diff_bands", lambda s: float(np.mean(s <= 1))),
        collateral_max_bands=("collateral_max_bands", "max"),
        collateral_within=("collateral_within_band", "mean"),
    )
    pd.set_option("display.width", 200)
    print(frame.drop(columns=["collateral_scratch_max"]).round(4).to_string(index=False))
    print("\n|warm - scratch| in noise bands (target: the edited occupation; collateral: all others)")
    print(summary.round(3).to_string())
    print(f"total {time.perf_counter() - start:.0f} s; load average {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
