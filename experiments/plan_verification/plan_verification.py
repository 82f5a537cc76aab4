"""Plan verification (issue 29): does a planned removal land B_gr in its target interval when retrained?

For each chosen occupation of a TransE model, the planner (:func:`kgbias_core.whatif.plan.plan_removal`, the
lab's defaults: the target is 0 +- the model's noise band where one is saved, else the tolerance) chooses the
removal; one masked retrain from the model's seed (:func:`kgbias_core.tasks.plan.verify_plan_task`, as the lab's
"Verify by retraining") gives the actual B_gr over the base's persons, the other occupations' actual changes
against their noise bands, and the MRR of the run against its base's. One row per occupation is appended to
``--out`` when it is done; a rerun skips the occupations already there (resumable), and ``OUT_summary.csv`` is
rewritten at the end.

    nice python experiments/plan_verification/plan_verification.py --model cached_models/fb15k237-transe \
        --occupations Actor Screenwriter "Film Director" Songwriter "Voice Actor" \
        --out experiments/plan_verification/results/fb15k237_plans.csv [--threads 1] [--device cpu]

``--scale-from ROUND1.csv``: plan each occupation with the Newton step scaled by the median retrained/predicted
ratio of the *other* occupations' rows of an earlier run of this script (leave one out:
:func:`kgbias_core.whatif.step_ratio.observed_step_ratio`, as the lab and ``kgbias plan`` read it from the model's own
record), so that no occupation's own retrain sets its scale.

``--step-scale auto``: plan each occupation as the lab and ``kgbias plan`` do by default, with the step scaled by
the model's own record at the moment it is planned (:func:`kgbias_core.whatif.step_ratio.model_step_ratio` for
plans: the plans verified before it, this run's included, or the audit's ratio before any; an occupation that has a
verified plan of its own in the record reads that plan's ratio: a second round, "verify, then plan again").
``--step-scale C``: a fixed scale. Without either, the step as computed (scale 1). ``--max-triples N``: the
planner's cap and ``--max-link-share S`` its bound on the link-prediction proxy (defaults the lab's).

``--control``: for each verified plan (new or already in ``--out``), one more masked retrain without a random
set of as many training triples, drawn from the triples the planner may take (profession and gender facts kept),
and the count of the same bounded occupations whose change leaves its band (columns ``control_outside``,
``control_share``). A removal of that size moves occupations by retraining noise alone; the control says how
many leave their bands with no plan at all, the yardstick for the plan's collateral.

``--add``: plan Du's Add (:func:`kgbias_core.whatif.plan_addition.plan_addition`: the fewest dummies of the rarer
gender) instead of a removal, as ``kgbias plan --add``; ``--step-scale auto`` then reads the model's Add ratio (its Add
audit and verified Add plans). A plan of no dummies (an Add that moves B_gr away from the target) is not retrained.

``--band seed``: the family's seed band sets the targets (the band moved to hold 0) and the other occupations'
bands (its seed range), as ``kgbias plan --band seed`` (:func:`kgbias_core.families.family_group_bias_band`);
``noise`` (default, rounds 1-4): the noise band.

``--plan-only``: plan each occupation and record the plan's prediction, its ``reach`` (the Newton step's first-order
change of removing every triple that moves the target its way: what no removal plan gets past) and ``band_units``,
with no retrain.

The model is only read; each verifying retrain is saved beside it, as the lab saves one. With ``--band noise`` a
model without a noise band gets one first (3 retrains from seeds 1, 2, 3: ``kgbias prepare`` computes the same
band).
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.commands.common import write_text
from kgbias_core.embeddings.store import load_model
from kgbias_core.families import family_group_bias_band
from kgbias_core.influence.retraining_check import masked_retrain_bias
from kgbias_core.jobs import Progress
from kgbias_core.tasks import noise_band_task, saved_noise_band
from kgbias_core.tasks.plan import verify_plan_task
from kgbias_core.whatif.plan import PlanConfig, group_facts, plan_removal, resolve_targets
from kgbias_core.whatif.plan_addition import plan_addition
from kgbias_core.whatif.step_ratio import ADDITIONS, PLANS, model_step_ratio, observed_step_ratio, saved_verifications


def _label(model: Path, occupation: str) -> str | None:
    """The label of ``occupation`` (a label or a name) in the model's record of verified plans, or None there."""
    record = saved_verifications(model)
    if record is None:
        return None
    hit = record[(record["occupation"] == occupation) | (record["name"].str.lower() == occupation.lower())]
    return str(hit["occupation"].iloc[0]) if len(hit) else None


def _done(out: Path) -> pd.DataFrame:
    return pd.read_csv(out) if out.is_file() else pd.DataFrame()


def _append(out: Path, row: dict) -> None:
    # atomic (commands.common.write_text): an interrupted run loses at most the row it was computing
    write_text(pd.concat([_done(out), pd.DataFrame([row])], ignore_index=True).to_csv(index=False), str(out))


def verify_occupation(model: Path, occupation: str, *, device: str, config: PlanConfig, band: str = "noise",
                      add: bool = False, retrain: bool = True) -> dict:
    """Plan ``occupation`` on ``model`` (a removal, or with ``add`` Du's Add), verify the plan by one retrain -> its
    row; a plan that edits nothing (already inside, or an Add that moves B_gr away) is not retrained, nor any plan
    without ``retrain`` (its row: the plan and its prediction)."""
    analysis = ModelAnalysis(load_model(model, device=device))
    noise = saved_noise_band(model)
    seed_band = family_group_bias_band(model) if band == "seed" else None
    started = time.process_time()
    targets = resolve_targets(analysis, [occupation], noise=noise, seed_band=seed_band, config=config)
    plan = (plan_addition(analysis, targets[0], noise=noise, seed_band=seed_band, config=config) if add else
            plan_removal(analysis, targets, noise=noise, seed_band=seed_band, config=config))
    plan_cpu_s = time.process_time() - started
    outcome = plan.targets[0]
    row = {"occupation": outcome.target.occupation, "name": outcome.name, "n_male": None, "n_female": None,
           "edit": plan.kind, "feasible": plan.feasible, "problem": plan.problems[0] if plan.problems else "",
           "k": len(plan.added.added_entities) if plan.added is not None else len(plan.removed),
           "plan_cpu_s": round(plan_cpu_s, 2), "predictions": plan.solves,
           "target_source": outcome.target.source, "target_low": outcome.target.low,
           "target_high": outcome.target.high, "step_scale": config.step_scale, "reach": outcome.reach,
           "band_units": plan.band_units}
    index = analysis.groups.index(outcome.target.occupation)
    row["n_male"], row["n_female"] = int(analysis.groups.n_male[index]), int(analysis.groups.n_female[index])
    if not plan.removed and plan.added is None:  # nothing to retrain: B_gr stays where it is
        return row | {"group_bias_before": outcome.before, "predicted": outcome.after, "actual": outcome.before,
                      "inside_actual": outcome.inside, "retrain_s": 0.0}
    if not retrain:
        return row | {"group_bias_before": outcome.before, "predicted": outcome.after,
                      "predicted_low": outcome.after_low, "predicted_high": outcome.after_high,
                      "inside_predicted": outcome.inside}
    started = time.perf_counter()
    record = verify_plan_task(base=model, plan=plan, device=device).run(Progress())
    verified = record.iloc[-1].to_dict()
    verified["retrain_s"] = round(time.perf_counter() - started, 1)
    verified["collateral_share"] = verified["collateral_actual"] / max(int(verified["bounded"]), 1)
    if verified.get("mrr_before") is not None and verified.get("mrr_after") is not None:
        verified["mrr_drop"] = float(verified["mrr_before"]) - float(verified["mrr_after"])
    return row | verified


def control_row(model: Path, occupation: str, k: int, *, device: str, config: PlanConfig, seed: int = 0) -> dict:
    """The random control of a plan of ``k`` triples for ``occupation``: one masked retrain without ``k`` random
    triples the planner could have taken, and how many of the plan's bounded occupations leave their bands."""
    analysis = ModelAnalysis(load_model(model, device=device))
    noise = saved_noise_band(model)
    targets = resolve_targets(analysis, [occupation], noise=noise, config=config)
    plan = plan_removal(analysis, targets, noise=noise, config=config)  # deterministic: the bands and who is bounded
    groups = analysis.groups
    # The planner never takes a profession or gender fact (keep_groups): neither does its control.
    excluded = group_facts(analysis) if config.keep_groups else np.zeros(analysis.model.triples.shape[0], dtype=bool)
    eligible = torch.from_numpy(np.flatnonzero(~excluded))
    generator = torch.Generator().manual_seed(seed)
    removed = eligible[torch.randperm(len(eligible), generator=generator)[:k]]
    started = time.perf_counter()
    after = masked_retrain_bias(analysis.model, removed=removed, groups=groups).cpu().double().numpy()
    # The unedited masked retrain reproduces the stored model bit for bit on its CPU class (METHODS §2).
    before = analysis.group_bias().cpu().double().numpy()
    change = pd.Series(after - before, index=list(groups.labels))
    frame = plan.collateral
    bounded = frame[frame["bounded"]]  # as verification_rows counts the plan's collateral
    moved = change.reindex(bounded["occupation"]).to_numpy()
    outside = int((np.abs(moved) > bounded["band"].to_numpy()).sum())
    return {"control_outside": outside, "control_share": outside / max(len(bounded), 1),
            "control_bounded": len(bounded), "control_k": k, "control_s": round(time.perf_counter() - started, 1)}


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """The issue's three numbers over the verified plans: landed inside, collateral share, MRR drop."""
    verified = frame[frame["k"] > 0]
    return pd.DataFrame([{
        "plans": len(frame), "verified": len(verified),
        "inside_target": int(frame["inside_actual"].astype(bool).sum()),
        "collateral_share_max": float(verified["collateral_share"].max()) if len(verified) else float("nan"),
        "mrr_drop_max": float(verified["mrr_drop"].max()) if "mrr_drop" in verified and len(verified)
        else float("nan"),
        "plan_cpu_s_max": float(frame["plan_cpu_s"].max()),
        **({"control_share_max": float(verified["control_share"].max())}
           if "control_share" in verified and verified["control_share"].notna().any() else {}),
    }])


def _add_control(args: argparse.Namespace, occupation: str, config: PlanConfig) -> None:
    """The control of a plan already in ``--out`` that has none yet (its k as verified), written back in place."""
    done = _done(args.out)
    at = done.index[(done["occupation"] == occupation) | (done["name"].str.lower() == occupation.lower())][0]
    if int(done.at[at, "k"]) == 0 or ("control_outside" in done and pd.notna(done.at[at, "control_outside"])):
        return
    control = control_row(args.model, str(done.at[at, "occupation"]), int(done.at[at, "k"]), device=args.device,
                          config=config)
    print({"name": done.at[at, "name"], **control}, flush=True)
    for key, value in control.items():
        done.loc[at, key] = value
    write_text(done.to_csv(index=False), str(args.out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, type=Path)
    parser.add_argument("--occupations", nargs="+", required=True, help="labels or names")
    parser.add_argument("--out", required=True, type=Path)
    scaling = parser.add_mutually_exclusive_group()  # one source of the step scale, not a silent precedence
    scaling.add_argument("--scale-from", type=Path, help="an earlier run's CSV: scale by the others' ratio (LOO)")
    scaling.add_argument("--step-scale", default=None, metavar="auto|C",
                        help="auto: the model's own record when each occupation is planned (as the lab); C: fixed")
    parser.add_argument("--max-triples", type=int, default=PlanConfig.max_triples,
                        help="the planner's cap on the triples of a plan (the lab's default unless given)")
    parser.add_argument("--max-link-share", type=float, default=PlanConfig.max_link_share,
                        help="the planner's bound on the link-prediction proxy (the lab's default unless given)")
    parser.add_argument("--band", choices=("noise", "seed"), default="noise",
                        help="what sets the targets and collateral bands: the noise band or the family's seed band")
    parser.add_argument("--control", action="store_true", help="one random removal of each plan's size beside it")
    parser.add_argument("--add", action="store_true",
                        help="plan Du's Add (the fewest dummies) instead of a removal; the step scale (auto) is the "
                             "model's Add ratio")
    parser.add_argument("--plan-only", action="store_true",
                        help="plan and record each plan's prediction and reach, retrain nothing (no summary)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    if args.control and args.band != "noise":  # control_row counts against the noise band's plan
        parser.error("--control: run it with --band noise")
    if args.add and (args.control or args.scale_from):  # both are about removals
        parser.error("--add: without --control and --scale-from")
    if args.plan_only and args.control:
        parser.error("--plan-only: without --control (a control is a retrain)")
    torch.set_num_threads(args.threads)
    print(f"load average before: {os.getloadavg()[0]:.2f}; {args.threads} torch thread(s)", flush=True)
    if args.band == "noise" and saved_noise_band(args.model) is None:  # the seed band needs no retrain
        print("no noise band saved: 3 retrains first", flush=True)
        noise_band_task(args.model).run(Progress())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    earlier = pd.read_csv(args.scale_from) if args.scale_from else None
    for occupation in args.occupations:
        config = PlanConfig()
        if earlier is not None:
            own = (earlier["name"].str.lower() == occupation.lower()) | (earlier["occupation"] == occupation)
            others = earlier[~own]
            ratio = observed_step_ratio(others, use=PLANS)
            config = PlanConfig(step_scale=ratio.value if ratio is not None else 1.0)
        elif args.step_scale == "auto":  # read now: the plans verified before this one are in the record
            ratio = (model_step_ratio(args.model, use=ADDITIONS) if args.add else
                     model_step_ratio(args.model, use=PLANS, occupation=_label(args.model, occupation)))
            config = PlanConfig(step_scale=ratio.value if ratio is not None else 1.0)
            print(f"{occupation}: step scale {config.step_scale:.3f}" + (f", {ratio.describe()}" if ratio else ""),
                  flush=True)
        elif args.step_scale is not None:
            config = PlanConfig(step_scale=float(args.step_scale))
        config = replace(config, max_triples=args.max_triples, max_link_share=args.max_link_share)
        done = _done(args.out)
        if len(done) and (occupation in set(done["occupation"]) or occupation.lower() in set(done["name"].str.lower())):
            if args.control:
                _add_control(args, occupation, config)
            continue
        row = verify_occupation(args.model, occupation, device=args.device, config=config, band=args.band,
                                add=args.add, retrain=not args.plan_only)
        if args.control and row["k"] > 0:
            row |= control_row(args.model, row["occupation"], int(row["k"]), device=args.device, config=config)
        print({k: row.get(k) for k in ("name", "n_male", "n_female", "k", "group_bias_before", "target_low",
                                       "target_high", "predicted", "actual", "inside_actual", "collateral_actual",
                                       "bounded", "mrr_drop", "plan_cpu_s", "retrain_s")}, flush=True)
        _append(args.out, row)
    if args.plan_only:
        return
    result = summary(_done(args.out))
    result.to_csv(args.out.with_name(args.out.stem + "_summary.csv"), index=False)
    print(result.to_string(index=False))


if __name__ == "__main__":
    main()
