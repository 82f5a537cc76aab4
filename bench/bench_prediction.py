"""The cost of one what-if prediction (issue 25: <= 10 s for FB15k-237 on the 2-core CPU, one thread).

    nice python bench/bench_prediction.py --model /tmp/store/fb15k237-transe [--threads 1] [--k 200] [--device cuda]

For the largest occupations with both genders: one IF-REMOVE set of k triples (the closed form's order) and
Du's Add (c = 0.5), each predicted by :func:`kgbias_core.whatif.edits.predict_edit` (the Newton step, |H|).
Times separately what a first prediction of a model pays once (the groups and the influence context, which
choose the set) and each prediction itself, with the CG iterations it used. Prints the load average before
and after, since the machine is shared, and the seconds of each prediction spent building |H| (a
the analysis's since 2026-12-07 for every distance, built by the first; before, a pseudo-Huber or L1 model built it
per prediction).
``--device`` loads the model there, so every measure and solve runs there
(issue 25's GPU target: <= 1 s); each time is taken after the device has finished its queued work. ``--refined``
also times the lab's refined prediction of each removal (:func:`kgbias_core.influence.refit_prediction.
refit_removal_prediction`: its own Newton step, then the rows B_gr reads refitted; unscaled, as the step here),
then of a second removal of the same occupation (2k triples), which shares the first one's unedited half.
``--refined-first`` starts each occupation with the refined prediction of a set of k / 2 triples, before anything
else of that occupation is computed (its own step, its own unedited half: what a refined what-if costs as an
occupation's first); the first one of the process also pays PyTorch's one-time import of ``torch._dynamo`` (about
1 s), which any optimizer's first step makes, and says so.
``--warm`` first does what the dashboard does before a page asks: ``torch._dynamo``'s import at launch
(:mod:`kgbias_app.launch`) and :meth:`~kgbias_core.analysis.ModelAnalysis.warm_up` when the model opens (the
influence context, then |H|), timed apart, so the lines after it are what a person waits for in the lab.
``--temperature T`` predicts each removal as the lab does once the model's audit has set the hinge's temperature T
(:mod:`kgbias_core.influence.hinge_curvature`; squared L2): H_T is built once, timed apart, then each prediction.
"""

from __future__ import annotations

import argparse
import importlib
import os
import resource
import sys
import time

import torch

from kgbias_core import analysis as analysis_module
from kgbias_core.analysis import ModelAnalysis
from kgbias_core.device import resolve_device
from kgbias_core.embeddings.store import load_model
from kgbias_core.influence import prediction
from kgbias_core.influence.refit_prediction import refit_removal_prediction
from kgbias_core.whatif.edits import make_edit, predict_edit


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--k", type=int, default=200)
    parser.add_argument("--occupations", type=int, default=3)
    parser.add_argument("--add", action="store_true", help="also time Du's Add (c = 0.5)")
    parser.add_argument("--device", default="cpu", help="cpu | cuda | auto (where the model's tensors go)")
    parser.add_argument("--refined", action="store_true", help="also time the refined prediction of each removal")
    parser.add_argument("--refined-first", action="store_true",
                        help="start each occupation with a refined prediction of k / 2 triples (nothing shared)")
    parser.add_argument("--temperature", type=float, help="predict removals with the hinge's curvature at this T")
    parser.add_argument("--warm", action="store_true",
                        help="first do what the app does when a model opens (torch._dynamo's import at launch, then "
                             "ModelAnalysis.warm_up: the influence context and |H|), timed apart")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    print(f"load average before: {os.getloadavg()[0]:.2f}; torch threads {args.threads}; device {device}")

    def clock() -> float:  # a GPU runs queued kernels after Python returns: wait for them before reading time
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return time.perf_counter()

    start = clock()
    analysis = ModelAnalysis(load_model(args.model, device=device))
    groups = analysis.groups
    loaded = clock()
    print(f"load + groups: {loaded - start:.1f} s ({analysis.model.triples.shape[0]:,} triples, "
          f"{analysis.model.n_entities:,} entities, dim {analysis.model.config.dim})")
    both = ((groups.n_male > 0) & (groups.n_female > 0)).nonzero().squeeze(-1).tolist()
    chosen = sorted(both, key=lambda i: -int(groups.n_male[i] + groups.n_female[i]))[: args.occupations]
    counted = [0]
    original = prediction.preconditioned_cg

    def counting(apply, rhs, **kwargs):  # counts the |H| products of each solve (the prediction's unit of work)
        def apply_counted(v):
            counted[0] += 1
            return apply(v)

        return original(apply_counted, rhs, **kwargs)

    prediction.preconditioned_cg = counting
    built = [0.0]
    original_build = prediction.absolute_curvature_hvp

    def timed_build(*args, **kwargs):  # the seconds a prediction spends building |H| (squared L2: once per model)
        start = clock()
        try:
            return original_build(*args, **kwargs)
        finally:
            built[0] += clock() - start

    prediction.absolute_curvature_hvp = timed_build
    analysis_module.absolute_curvature_hvp = timed_build  # squared L2's memo builds it from there
    if args.warm:  # what the app does when a model opens, before a page asks for anything
        t0 = clock()
        importlib.import_module("torch._dynamo")  # at launch (kgbias_app.launch.PRELOAD): an optimizer's step needs it
        t1 = clock()
        analysis.warm_up().join()
        print(f"the app's warm-up: torch._dynamo imported in {t1 - t0:.1f} s (at launch), then in the background "
              f"the influence context and |H| in {clock() - t1:.1f} s (|H| {built[0]:.1f} s of it)")
    if args.temperature is not None:  # H_T, once per analysis and T (the lab's memo), on |H| built first
        t0 = clock()
        analysis.hinge_hvp(args.temperature)
        print(f"H_T at T = {args.temperature:g} margins built in {clock() - t0:.1f} s (|H| in {built[0]:.1f} s of it)")
    for index in chosen:
        label, name = groups.labels[index], groups.names[index]
        if args.refined_first:  # nothing of this occupation computed yet: no step kept, no unedited half
            half = make_edit(analysis, label, strategy="if", k=max(1, args.k // 2))
            imported = "torch._dynamo" in sys.modules  # an optimizer's first step in a process imports it
            counted[0], built[0] = 0, 0.0
            t0 = clock()
            got = refit_removal_prediction(analysis, label, torch.tensor(half.removed, dtype=torch.long))
            print(f"{name}: refined first, k={len(half.removed)}: {clock() - t0:.2f} s (its own step, "
                  f"{counted[0]} |H| products, |H| built in {built[0]:.1f} s, its own unedited half"
                  f"{'' if imported else ', the import of torch._dynamo'}): {got.summary()}")
        t0 = clock()
        edit = make_edit(analysis, label, strategy="if", k=args.k)
        t1 = clock()
        counted[0], built[0] = 0, 0.0
        got = predict_edit(analysis, edit, temperature=args.temperature)
        t2 = clock()
        operator = "|H|" if args.temperature is None else "H_T"
        print(f"{name} ({int(groups.n_male[index])}/{int(groups.n_female[index])}): IF-REMOVE k={len(edit.removed)} "
              f"chosen in {t1 - t0:.1f} s (influence context on first use); prediction {t2 - t1:.2f} s, "
              f"{counted[0]} {operator} products, |H| built in {built[0]:.4f} s: {got.summary()}")
        if args.refined:
            t3 = clock()
            got = refit_removal_prediction(analysis, label, torch.tensor(edit.removed, dtype=torch.long))
            print(f"    refined: {clock() - t3:.2f} s (step and refit): {got.summary()}")
            other = make_edit(analysis, label, strategy="if", k=2 * args.k)  # the occupation's next what-if
            t3 = clock()
            got = refit_removal_prediction(analysis, label, torch.tensor(other.removed, dtype=torch.long))
            print(f"    refined, k={len(other.removed)} next: {clock() - t3:.2f} s (the unedited half shared): "
                  f"{got.summary()}")
        if args.add:
            edit = make_edit(analysis, label, strategy="add", c=0.5)
            counted[0] = 0
            t3 = clock()
            got = predict_edit(analysis, edit)
            t4 = clock()
            print(f"    Add c=0.5 ({len(edit.added_entities)} dummies): prediction {t4 - t3:.2f} s, "
                  f"{counted[0]} |H| products: {got.summary()}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(f"load average after: {os.getloadavg()[0]:.2f}; peak resident memory {peak:,.0f} MiB")


if __name__ == "__main__":
    main()
