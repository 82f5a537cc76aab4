"""Speed of the planner (issue 29): one plan per occupation, CG in single precision refined in double against all
in double, and the Newton linear influence with each triple's positive term once against once per pair.

    python bench/bench_plan.py [--model cached_models/fb15k237-transe] [--occupations actor,screenwriter,...]
        [--threads 1] [--step-scale auto|C] [--band noise|seed]

One run, same machine, same load: for each occupation the plan is made twice, once per precision, each on its own
|H| matrix (built once per model, as the lab builds it once per analysis; its build time is printed apart: the
baseline from the active terms, the planner from the what-if predictions' matrix, built first and timed). The
two plans must be the same triples and predict the same change (to 1e-5): the printed ratio is a speed-up of one
computation. ``--step-scale auto`` (default) plans with the model's own scale for plans, as ``kgbias plan`` does.
Then the linear influence (:func:`~kgbias_core.influence.iterative.influence_from_solution`) of the first
occupation's solution, against the former formula over every pair (the same figures to float rounding). Prints
peak memory (max RSS) at the end. The issue's bar: a plan in 5 s of CPU. ``--band seed`` plans against the model's
family's seed band, as ``kgbias plan`` does by default for a family (the band read once, before the timings).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time

import numpy as np
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embeddings.store import load_model
from kgbias_core.families import family_group_bias_band
from kgbias_core.influence.iterative import group_bias_rhs, influence_from_solution
from kgbias_core.tasks import saved_noise_band
from kgbias_core.whatif import plan as planner
from kgbias_core.whatif.step_ratio import PLANS, model_step_ratio

OCCUPATIONS = "actor,screenwriter,film director,songwriter,voice actor"  # the five verified plans of issue 29


def all_pairs_influence(context, solution) -> torch.Tensor:
    """The former formula: each pair's positive term computed again for each of its triple's K pairs, unblocked."""
    s_e, s_r = solution
    slots, relation = context.slots, context.relation
    positive = ((s_e[slots[:, 0]] - s_e[slots[:, 1]] + s_r[relation]) * context.residual).sum(-1)
    negative = ((s_e[slots[:, 2]] - s_e[slots[:, 3]] + s_r[relation]) * context.residual_negative).sum(-1)
    return context.per_triple(2.0 * (positive - negative))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="cached_models/fb15k237-transe")
    parser.add_argument("--occupations", default=OCCUPATIONS)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--step-scale", default="auto")
    parser.add_argument("--band", choices=("noise", "seed"), default="noise",
                        help="what sets the targets and bands: the noise band, or the family's seed band")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch threads {args.threads}; load average {os.getloadavg()[0]:.2f} at start", flush=True)
    analysis = ModelAnalysis(load_model(args.model))
    model = analysis.model
    ratio = model_step_ratio(args.model, use=PLANS)
    scale = (ratio.value if ratio is not None else 1.0) if args.step_scale == "auto" else float(args.step_scale)
    noise = saved_noise_band(args.model)
    band = family_group_bias_band(args.model) if args.band == "seed" else None
    print(f"{model.name}: {model.triples.shape[0]} triples, {model.frozen_negatives.shape[0]} frozen negatives, "
          f"d {model.config.dim}; step scale {scale:.3f}", flush=True)
    config = planner.PlanConfig(step_scale=scale)
    names = [o.strip() for o in args.occupations.split(",") if o.strip()]
    targets = {name: planner.resolve_targets(analysis, [name], noise=noise, seed_band=band, config=config)
               for name in names}
    for name in names:
        analysis.influence(analysis.groups.labels[analysis.groups.index(targets[name][0].occupation)])
    seconds: dict[bool, list[float]] = {True: [], False: []}
    plans: dict[bool, list] = {True: [], False: []}
    started = time.perf_counter()
    terms = analysis.absolute_hvp.terms  # the what-if predictions' |H|, which the lab builds on its first prediction
    print(f"the predictions' |H| matrix (an analysis builds it once): {time.perf_counter() - started:.2f} s")
    for single in (False, True):  # double first: its matrix is dropped before the single one is built
        started = time.perf_counter()
        # the baseline builds M from the terms as the planner did; the planner now reads the predictions' matrix
        curvature = planner.SparseCurvature(model, single=single, terms=terms if single else None)
        built = time.perf_counter() - started
        planner._CURVATURES[analysis] = curvature  # the memo sparse_curvature reads
        print(f"{'single' if single else 'double'}: |H| matrix {curvature.matrix.shape[0]} rows, "
              f"{curvature.matrix.nnz} non-zeros, built in {built:.2f} s", flush=True)
        for name in names:
            started = time.perf_counter()
            plan = planner.plan_removal(analysis, targets[name], noise=noise, seed_band=band, config=config)
            seconds[single].append(time.perf_counter() - started)
            plans[single].append(plan)
            outcome = plan.targets[0]
            print(f"  {outcome.name:16s} {len(plan.removed):5d} triples, {plan.solves} solves, change "
                  f"{outcome.after - outcome.before:+.6f}: {seconds[single][-1]:.2f} s", flush=True)
        del curvature
        planner._CURVATURES.pop(analysis, None)
    for double, single in zip(plans[False], plans[True], strict=True):
        same = double.removed == single.removed and np.isclose(
            double.targets[0].after, single.targets[0].after, rtol=0, atol=1e-5)
        if not same:
            raise SystemExit(f"{double.targets[0].name}: the single-precision plan differs from the double one")
    ratios = [d / s for d, s in zip(seconds[False], seconds[True], strict=True)]
    print(f"plan: double median {statistics.median(seconds[False]):.2f} s, single median "
          f"{statistics.median(seconds[True]):.2f} s (max {max(seconds[True]):.2f} s); speed-up median "
          f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}); same plans to 1e-5")

    context = analysis.context
    curvature = planner.SparseCurvature(model)
    index = analysis.groups.index(targets[names[0]][0].occupation)
    stacked = torch.cat(group_bias_rhs(context, index)).double().numpy()
    solution = curvature.split(curvature.solve(stacked, tolerance=planner.SEARCH_TOLERANCE), context.entity_embeddings)
    timings = {}
    for label, compute in (("every pair", lambda: all_pairs_influence(context, solution)),
                           ("standing pairs", lambda: influence_from_solution(context, model, solution))):
        runs = []
        for _ in range(3):
            started = time.perf_counter()
            result = compute()
            runs.append(time.perf_counter() - started)
        timings[label] = (statistics.median(runs), result)
    old, new = timings["every pair"][1], timings["standing pairs"][1]
    error = float((old - new).abs().max() / old.abs().max())
    (every, _), (standing, _) = timings["every pair"], timings["standing pairs"]
    print(f"linear influence ({names[0]}): every pair {every:.2f} s, positive term once per triple {standing:.2f} s "
          f"({every / standing:.2f}x); largest difference {error:.1e} of the largest |delta|")
    print(f"peak memory (max RSS) {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
