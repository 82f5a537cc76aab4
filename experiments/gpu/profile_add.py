"""Where the time of one Add prediction goes on a device (issue 25: <= 1 s on a GPU).

    python3 experiments/gpu/profile_add.py --model DIR [--device cuda] [--occupation Actor] [--rows 25]

Runs Du's Add (c = 0.5) prediction (:func:`kgbias_core.whatif.edits.predict_edit`) once to warm up, then once
under :mod:`torch.profiler`, and prints the operators that took the most device and host time, with their call
counts: whether the prediction is bound by kernel time or by the number of launches.
"""

from __future__ import annotations

import argparse
import time

import torch
from torch.profiler import ProfilerActivity, profile

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.device import resolve_device
from kgbias_core.embeddings.store import load_model
from kgbias_core.whatif.edits import make_edit, predict_edit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--occupation", default="Actor")
    parser.add_argument("--rows", type=int, default=25)
    args = parser.parse_args()
    device = resolve_device(args.device)
    analysis = ModelAnalysis(load_model(args.model, device=device))
    label = analysis.groups.labels[list(analysis.groups.names).index(args.occupation)]
    edit = make_edit(analysis, label, strategy="add", c=0.5)
    for attempt in ("warm-up", "timed"):
        start = time.perf_counter()
        predict_edit(analysis, edit)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        print(f"{attempt}: {time.perf_counter() - start:.2f} s")
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        predict_edit(analysis, edit)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    averages = prof.key_averages()
    for key in (["cuda_time_total"] if device.type == "cuda" else []) + ["cpu_time_total"]:
        print(averages.table(sort_by=key, row_limit=args.rows, max_name_column_width=60))
    print(f"operator calls in all: {sum(event.count for event in averages):,}")


if __name__ == "__main__":
    main()
