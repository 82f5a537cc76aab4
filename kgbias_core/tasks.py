"""Jobs of the debiasing lab: what-if retrains and removal curves, run through a JobRegistry.

Each function here returns a callable ``fn(progress)`` for :meth:`JobRegistry.submit`. The base
model is only read; a finished what-if is saved as a new model directory (atomically, so a failed
or cancelled job leaves nothing behind under a model's name).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.embeddings.store import load_model, save_model
from kgbias_core.influence.closed_form import debiasing_removal
from kgbias_core.influence.retraining_check import masked_retrain_bias, removal_set
from kgbias_core.jobs import Progress
from kgbias_core.whatif.edits import Edit, Mode, remove_edit, retrain


def whatif_job(*, store: Path, base: str, edit: Edit, mode: Mode, name: str) -> Callable[[Progress], str]:
    """Retrain ``base`` with ``edit`` and save the run as ``name`` in ``store``; the job returns ``name``."""

    def run(progress: Progress) -> str:
        model = load_model(store / base)
        what_if = retrain(model, edit, name=name, mode=mode, on_epoch=progress.as_callback(stage="retraining"),
                          should_stop=progress.should_stop)
        progress.update(stage="saving", message="saving the run")
        save_model(what_if, store)
        return name

    return run


def removal_curve_job(
    *, store: Path, base: str, occupation: str, ks: Sequence[int], seed: int = 0
) -> Callable[[Progress], pd.DataFrame]:
    """B_gr of ``occupation`` after IF-REMOVE and Random-REMOVE of k triples, for each k (Du Fig. 4d-f).

    Masked retrains from the base seed (METHODS §2), so k = 0 is the base model itself. The job
    returns a frame ``strategy, k, predicted, group_bias``.
    """

    def run(progress: Progress) -> pd.DataFrame:
        model = load_model(store / base)
        analysis = ModelAnalysis(model)
        index = analysis.groups.index(occupation)
        before = float(analysis.group_bias(occupation))
        influence = analysis.influence(occupation)
        scale = model.influence_scale or 1.0
        rows = [{"strategy": s, "k": 0, "predicted": before, "group_bias": before}
                for s in ("IF-REMOVE", "Random-REMOVE")]
        plan = [(s, k) for k in ks for s in ("IF-REMOVE", "Random-REMOVE")]
        for step, (strategy, k) in enumerate(plan, start=1):
            progress.update(stage="retraining", step=step - 1, total=len(plan), message=f"{strategy} k={k}")
            if strategy == "IF-REMOVE":
                removed = debiasing_removal(influence, bias=before, k=k)
            else:
                removed = removal_set(influence, kind="random", k=k, seed=seed)
            after = masked_retrain_bias(model, removed=removed, groups=analysis.groups,
                                        should_stop=progress.should_stop)
            rows.append({"strategy": strategy, "k": k,
                         "predicted": before + scale * float(influence[removed].sum()),
                         "group_bias": float(after[index])})
        progress.update(step=len(plan), total=len(plan), message="done")
        return pd.DataFrame(rows)

    return run


def if_remove_edit(analysis: ModelAnalysis, occupation: str, *, k: int) -> Edit:
    """The IF-REMOVE edit for ``occupation``: the k triples that move its B_gr most towards 0."""
    bias = float(analysis.group_bias(occupation))
    removed = debiasing_removal(analysis.influence(occupation), bias=bias, k=k)
    return remove_edit(analysis.model, occupation, removed, strategy=f"if-remove k={k}")
