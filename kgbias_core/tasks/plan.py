"""The planner's long work (issue 29): verifying a plan by a masked retrain, and recording predicted against actual."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.device import resolve_device
from kgbias_core.embeddings.store import load_model, read_config
from kgbias_core.errors import PLAN_EMPTY, MeasureError, ModelStoreError
from kgbias_core.evaluation.link_prediction import cached_link_prediction, headline, load_link_prediction
from kgbias_core.jobs import Progress
from kgbias_core.tasks.base import Task, _key, check_retrains
from kgbias_core.tasks.whatif import whatif_name, whatif_task
from kgbias_core.whatif.edits import Edit
from kgbias_core.whatif.plan import Plan, append_verifications, verification_rows
from kgbias_core.whatif.runs import bias_change, made_from


def plan_edit(plan: Plan) -> Edit:
    """The plan as an edit: its removal (named after its first target; every target is in the strategy), or an Add
    plan's dummies (its strategy is Add's, "add c=..."; the run's record rebuilds them)."""
    if plan.kind == "add":
        if plan.added is None:
            raise MeasureError(PLAN_EMPTY)
        return plan.added
    if not plan.removed:
        raise MeasureError(PLAN_EMPTY)
    labels = ", ".join(o.target.occupation for o in plan.targets)
    return Edit(kind="remove", occupation=plan.targets[0].target.occupation, removed=tuple(sorted(plan.removed)),
                strategy=f"plan k={len(plan.removed)} ({labels})")


def plan_run_dir(base: Path | str, plan: Plan) -> Path:
    """Where the verifying retrain of ``plan`` is saved: beside its base, named as the lab names what-ifs."""
    base = Path(base)
    return base.parent / whatif_name(base.name, plan_edit(plan), occupation_name=plan.targets[0].name)


def retrained_before(run_dir: Path | str, base: Path | str, edit: Edit) -> bool:
    """True when ``run_dir`` holds a retrain of exactly ``edit`` from the model now at ``base`` (its recorded edit
    and base fingerprint, :func:`~kgbias_core.whatif.runs.made_from`)."""
    try:
        run, base_config = read_config(run_dir), read_config(base)
    except ModelStoreError:
        return False
    recorded = {key: value for key, value in (run.get("edit") or {}).items() if key not in ("base", "mode")}
    return made_from(run, base_config) and recorded == json.loads(json.dumps(edit.describe()))


def _mrr(model_dir: Path | str) -> float | None:
    """The filtered MRR a model is quoted by (all test queries, heads and tails pooled: :func:`headline`). Before
    2026-11-27 evening this read the first "all" row, the head side, into the records of verified plans."""
    line = headline(load_link_prediction(model_dir))
    return None if line is None else line["mrr"]


def verify_plan_task(*, base: Path | str, plan: Plan, evaluate: bool = True,
                     device: torch.device | str | None = None) -> Task[pd.DataFrame]:
    """Retrain the model at ``base`` without the plan's triples, or with an Add plan's dummies (masked, from its
    seed: as the lab's what-ifs, :func:`~kgbias_core.tasks.whatif.whatif_task`), save the run beside it, and append
    each target's predicted and actual B_gr to the base's record of verified plans
    (:func:`~kgbias_core.whatif.plan.append_verifications`).
    ``evaluate``: also link prediction of the run and its base (their MRR goes into the record).
    -> the whole record.
    """
    device = resolve_device(device)
    edit = plan_edit(plan)
    out = plan_run_dir(base, plan)

    def run(progress: Progress) -> pd.DataFrame:
        if retrained_before(out, base, edit):
            # deterministic under the base's seed on one machine: a second retrain would only reproduce it (FB13's
            # Actor, planned again with its own ratio, took the same triples and retrained to the same bit)
            progress.update(stage="reading", message=f"{out.name}: this edit of this model was retrained before; "
                                                     "reading that run")
            path = str(out)
            if evaluate:
                cached_link_prediction(path, device=device)
                cached_link_prediction(base, device=device)
        else:
            check_retrains(base, what="verifying the plan (a full retrain)", retrains=1)
            retrain = whatif_task(base=base, edit=edit, out=out, evaluate=evaluate, overwrite=True, device=device)
            path = retrain.run(progress)
        progress.update(stage="comparing", message="predicted against actual B_gr")
        before = ModelAnalysis(load_model(base, device=device))
        after = ModelAnalysis(load_model(path, device=device))
        rows = verification_rows(plan, bias_change(before, after), run=Path(path).name,
                                 mrr_before=_mrr(base) if evaluate else None,
                                 mrr_after=_mrr(path) if evaluate else None)
        return append_verifications(base, rows)

    digest = hashlib.sha1(json.dumps(edit.describe(), sort_keys=True).encode("utf-8")).hexdigest()[:12]
    return Task(key=_key("verify_plan", base, removed=digest, evaluate=evaluate), run=run)
