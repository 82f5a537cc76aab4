"""plan: the smallest removal (or Add) that brings B_gr of target occupations into an interval, predicted (--verify
retrains)."""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace

from kgbias_core.commands.common import (
    PrintedProgress,
    csv_out,
    integer,
    load_analysis,
    real,
    write_csv,
)

#: Triples printed in words; the rest are in --out.
SHOWN = 20


def target_interval(text: str) -> tuple[str, float, float]:
    """An argparse type: ``OCCUPATION=LOW:HIGH`` (``actor=-0.01:0.01``), else one line naming the format."""
    from kgbias_core.errors import PLAN_TARGET_FORMAT

    occupation, _, interval = text.rpartition("=")
    low, _, high = interval.partition(":")
    try:
        values = float(low), float(high)
    except ValueError:
        values = None
    if not occupation or values is None or not all(map(math.isfinite, values)) or values[0] > values[1]:
        raise argparse.ArgumentTypeError(PLAN_TARGET_FORMAT.format(text=text))
    return occupation, values[0], values[1]


#: After a verified single-target plan that missed: the next plan of that occupation reads this retrain's ratio.
AGAIN = ("outside: plan {name} again (the same command) and the step is scaled by the ratio this retrain showed for "
         "{name}, its own verified plan")


def step_scale(text: str) -> float | None:
    """An argparse type: ``auto`` (None: the model's observed ratio) or a positive number, else one line."""
    if text == "auto":
        return None
    return real(0, above=True, high=10)(text)


def _plan(args: argparse.Namespace) -> None:
    from kgbias_core.errors import PLAN_ADD_ONE_TARGET, MeasureError
    from kgbias_core.tasks import saved_noise_band
    from kgbias_core.tasks.base import check_retrains
    from kgbias_core.tasks.plan import verify_plan_task
    from kgbias_core.whatif.plan import (
        PlanConfig,
        plan_removal,
        plan_summary,
        plan_triples,
        resolve_targets,
    )
    from kgbias_core.whatif.plan_addition import plan_addition
    from kgbias_core.whatif.step_ratio import ADDITIONS, PLANS, model_step_ratio

    if args.add and len(args.occupations) != 1:
        raise MeasureError(PLAN_ADD_ONE_TARGET.format(n=len(args.occupations)))
    if args.verify:  # refused before the model is read, as every retraining command does
        check_retrains(args.model, what="plan --verify (a full retrain)", retrains=1)
    analysis = load_analysis(args.model, device=args.device)
    seed_band = _seed_band(args)
    config = PlanConfig(max_triples=args.max_triples, max_link_share=args.max_link_share, tolerance=args.tolerance,
                        keep_groups=not args.allow_group_facts, step_scale=args.step_scale or 1.0)
    noise = saved_noise_band(args.model) if args.band != "seed" else None
    targets = resolve_targets(analysis, args.occupations, intervals={o: (lo, hi) for o, lo, hi in args.target or ()},
                              noise=noise, seed_band=seed_band, config=config)
    if args.step_scale is None:  # after the input is checked: a refused command prints its one line and nothing else
        # one target with a verified plan of its own reads its own ratio (step_ratio's module docstring)
        single = targets[0].occupation if len(targets) == 1 else None
        ratio = (model_step_ratio(args.model, use=ADDITIONS) if args.add else
                 model_step_ratio(args.model, use=PLANS, occupation=single))
        config = replace(config, step_scale=ratio.value if ratio is not None else 1.0)
        print(f"step scale {config.step_scale:.3f}: {ratio.describe()}" if ratio is not None else
              "step scale 1: no retrain of this model has been compared with its prediction yet (an audit or a "
              "verified plan gives the ratio)")
    if args.add:
        plan = plan_addition(analysis, targets[0], noise=noise, seed_band=seed_band, config=config, c_max=args.c_max)
    else:
        plan = plan_removal(analysis, targets, noise=noise, seed_band=seed_band, config=config)
    for line in plan_summary(plan):
        print(line)
    triples = plan_triples(analysis, plan)
    shown = triples.head(SHOWN)
    for order, row, words in zip(shown["order"], shown["row"], shown["in words"], strict=True):
        print(f"  {order:>4}. {words}" + ("   (added)" if args.add else f"   (training row {row})"))
    if len(triples) > SHOWN:
        print(f"  ... {len(triples) - SHOWN} more" + (" (in --out)" if args.out else " (pass --out for all)"))
    if args.out:
        write_csv(triples, args.out)
    if args.verify and (plan.removed or plan.added is not None):
        record = verify_plan_task(base=args.model, plan=plan, device=args.device).run(PrintedProgress())
        for row in record.tail(len(plan.targets)).itertuples(index=False):
            print(f"verified {row.name}: predicted {row.predicted:+.4f} [{row.predicted_low:+.4f}, "
                  f"{row.predicted_high:+.4f}]  actual {row.actual:+.4f}  "
                  f"({'inside' if row.inside_actual else 'outside'} the target; collateral beyond the bands: "
                  f"{row.collateral_actual} of {row.bounded}; run {row.run})")
        # an Add plan reads every verified Add of the model, not its own occupation's (step_ratio)
        if len(plan.targets) == 1 and plan.kind != "add" and not bool(record.iloc[-1]["inside_actual"]):
            print(AGAIN.format(name=plan.targets[0].name))
    elif args.verify:
        print("nothing to verify: the plan edits nothing", file=sys.stderr)


def _seed_band(args: argparse.Namespace):
    """The family's B_gr band for ``--band`` auto (where the model has a family) and seed (required), else None."""
    from kgbias_core.errors import PLAN_NO_FAMILY, MeasureError
    from kgbias_core.families import family_group_bias_band

    if args.band == "noise":
        return None
    band = family_group_bias_band(args.model)
    if band is None and args.band == "seed":
        raise MeasureError(PLAN_NO_FAMILY.format(model=args.model))
    return band


def register(commands: argparse._SubParsersAction) -> None:
    """Add plan to the command line."""
    plan = commands.add_parser(
        "plan", help="plan the smallest removal (or Add, --add) whose predicted B_gr lands in a target interval, "
                     "with bounded collateral; --verify retrains it")
    plan.add_argument("--model", required=True,
                      help="TransE model directory (only read; --verify saves a run beside it)")
    plan.add_argument("--occupations", nargs="+", required=True, help="target occupations (labels or names)")
    plan.add_argument("--target", action="append", type=target_interval, metavar="OCC=LOW:HIGH",
                      help="a target interval of B_gr (repeatable; default from --band, else 0 ± --tolerance)")
    plan.add_argument("--band", choices=("auto", "seed", "noise"), default="auto",
                      help="what counts as noise, for the default targets and the other occupations' bands: seed, "
                           "the family's seed band (target: the band moved to hold 0); noise, the noise band "
                           "(target 0 ± its spread); auto (default): seed where the model has a family, else noise")
    plan.add_argument("--tolerance", type=real(0, above=True, high=10), default=0.1,
                      help="without a noise band: target 0 ± this × |B_gr|, and the other occupations' bands")
    plan.add_argument("--max-triples", type=integer(1), default=2000, help="remove at most this many triples")
    plan.add_argument("--max-link-share", type=real(0, above=True, high=1), default=0.01,
                      help="bound on the link-prediction proxy: the mean share of a test query's entities' "
                           "training triples removed")
    plan.add_argument("--allow-group-facts", action="store_true",
                      help="let the plan remove profession and gender facts (changes who is counted in B_gr)")
    plan.add_argument("--step-scale", type=step_scale, default=None, metavar="auto|C",
                      help="multiply the Newton step by C; auto (default): by the median ratio of retrained to "
                           "predicted change over this model's verified plans and audit (1 before any)")
    plan.add_argument("--add", action="store_true",
                      help="plan Du's Add instead of a removal: the fewest dummies of the rarer gender (one target; "
                           "each prediction replays the dummies' training, ~5 s on FB15k-237)")
    plan.add_argument("--c-max", type=real(0, above=True, high=10), default=1.0,
                      help="--add: at most c·| |M| − |F| | dummies (1: as many as make the groups equal)")
    plan.add_argument("--out", type=csv_out, help="CSV of the plan's triples in words")
    plan.add_argument("--verify", action="store_true",
                      help="retrain without the triples (masked, from the model's seed) and record predicted "
                           "against actual in the model's results")
    plan.set_defaults(handler=_plan)
