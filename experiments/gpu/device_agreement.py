"""A model trained on one device against the same config trained on another: B_gr per occupation.

    python3 experiments/gpu/device_agreement.py --model cached_models/fb13-transe --write ref.json      # on the CPU
    python3 experiments/gpu/device_agreement.py --model /tmp/fb13-gpu --against ref.json --rerun         # on the GPU

``--write`` stores the model's B_gr (Du eq. 3) for every occupation with its group sizes, the device
and the training time. ``--against`` prints, for the occupations with at least ``--min-group``
persons of each gender in both, Pearson r, the largest and the median |Delta B_gr| and the sign
agreement, next to the two training times. float32 sums run in another order on a GPU, so two
devices never agree bit for bit; ``--rerun`` trains the model's own config once more on this device
from the same seed and frozen negatives and reports whether the weights are equal and the same
figures against the first run: how far this device's training is from reproducing itself (nothing,
since :func:`~kgbias_core.embeddings.training.reproducible`). Last, the model's B_gr is measured
again, to show whether the measure itself repeats.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from scipy.stats import pearsonr

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embeddings.store import StoredModel, load_model
from kgbias_core.embeddings.training import default_device, train_transe


def group_biases(model: StoredModel) -> dict[str, tuple[float, int, int]]:
    """{occupation label: (B_gr, |M_o|, |F_o|)} for every occupation of ``model``."""
    analysis = ModelAnalysis(model)
    groups = analysis.groups
    values = analysis.group_bias().cpu().tolist()
    return {label: (value, int(m), int(f)) for label, value, m, f in
            zip(groups.labels, values, groups.n_male.tolist(), groups.n_female.tolist(), strict=True)}


def compare(ours: dict, theirs: dict, *, min_group: int) -> str:
    keys = [k for k in ours if k in theirs
            and min(ours[k][1], ours[k][2], theirs[k][1], theirs[k][2]) >= min_group
            and np.isfinite(ours[k][0]) and np.isfinite(theirs[k][0])]
    a = np.array([ours[k][0] for k in keys])
    b = np.array([theirs[k][0] for k in keys])
    diff = np.abs(a - b)
    r = pearsonr(a, b)[0] if len(keys) > 2 else float("nan")
    signs = int((np.sign(a) == np.sign(b)).sum())
    return (f"{len(keys)} occupations (>= {min_group} of each gender): r {r:.5f}, max |dB_gr| {diff.max():.4f}, "
            f"median {np.median(diff):.4f}, same sign {signs}/{len(keys)}, B_gr range {a.min():+.3f}..{a.max():+.3f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--write", help="JSON reference to write")
    parser.add_argument("--against", help="JSON reference to compare with")
    parser.add_argument("--rerun", action="store_true", help="retrain once more here and compare with the model")
    parser.add_argument("--min-group", type=int, default=5)
    args = parser.parse_args()
    model = load_model(args.model)
    device = default_device()
    ours = group_biases(model.to(device))
    trained_on, seconds = model.info.get("device"), model.info.get("train_seconds")
    print(f"{args.model}: {model.dataset}, trained on {trained_on} in {seconds:.1f} s; this run on {device}")
    if args.write:
        Path(args.write).write_text(json.dumps({"device": trained_on, "train_seconds": seconds, "b_gr": ours}))
    if args.against:
        reference = json.loads(Path(args.against).read_text())
        agreement = compare(ours, reference["b_gr"], min_group=args.min_group)
        print(f"against {args.against} (trained on {reference['device']} in {reference['train_seconds']:.1f} s, "
              f"ratio {reference['train_seconds'] / seconds:.1f}x): {agreement}")
    if args.rerun:
        start = time.perf_counter()
        result = train_transe(triples=model.triples, negatives=model.negatives, n_entities=model.n_entities,
                              n_relations=model.n_relations, config=model.config, device=device)
        if device.type == "cuda":
            torch.cuda.synchronize()
        again = replace(model, weights={"entity_embeddings": result.entity_embeddings,
                                        "relation_embeddings": result.relation_embeddings})
        same = torch.equal(result.entity_embeddings, model.entity_embeddings)
        weights_diff = float((result.entity_embeddings - model.entity_embeddings).abs().max())
        agreement = compare(group_biases(again.to(device)), ours, min_group=args.min_group)
        print(f"rerun on {device} ({time.perf_counter() - start:.1f} s): weights equal {same} "
              f"(max |diff| {weights_diff:.1e}); {agreement}")
    measured_again = group_biases(model.to(device))
    print(f"B_gr of the same weights measured twice on {device}: {compare(measured_again, ours, min_group=1)}")


if __name__ == "__main__":
    main()
