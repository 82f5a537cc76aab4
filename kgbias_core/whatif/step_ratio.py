"""What a model's own retrains said about its what-if prediction, and the step scale read from them (issue 25).

Two records in the model's results folder compare the Newton step (:mod:`kgbias_core.influence.prediction`)
with a masked retrain of the same edit: the one-retrain audit (:data:`PREDICTION_AUDIT`, written by
:mod:`kgbias_core.tasks.prediction_audit`) and the verified plans (:data:`VERIFICATIONS`, written by
:func:`kgbias_core.whatif.plan.append_verifications`). Their ratio retrained / predicted is the step scale
that the lab, the basket, ``debias``, the report and the planner multiply a removal's step by.

Why a ratio: the step is the optimum's shift (Du Eq. 2 with |H|, METHODS §4); a retrain of finite epochs
moves part of it, and the part is much the same across occupations and edit sizes of one model (on the
FB15k-237 default 0.22-0.30 over five planned occupations), while it differs between models (0.82 on the
synthetic graph of the tests). A median is robust to one odd retrain; the clip keeps one wild ratio from
making the planner remove nothing or everything.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from kgbias_core.embeddings.results import load_result

#: The result key of the one-retrain audit in the model's results.
PREDICTION_AUDIT = "prediction_audit"
#: Key of the per-model record of verified plans in the model's results folder.
VERIFICATIONS = "plan_verifications"
#: The observed ratio is clipped to this range: one odd retrain must not make the planner remove nothing or all.
STEP_SCALE_RANGE = (0.05, 2.0)
#: A verified change smaller than this (B_gr units) says nothing about the ratio: left out of it.
RATIO_MIN_CHANGE = 1e-6


@dataclass(frozen=True)
class StepRatio:
    """The ratio of retrained to predicted change of B_gr over a model's own retrains (:func:`observed_step_ratio`)."""

    value: float  # the median, clipped to STEP_SCALE_RANGE
    n: int  # the retrains it is read from
    low: float  # the smallest and largest single ratio
    high: float


def saved_prediction_audit(model_dir: Path | str) -> pd.DataFrame | None:
    """The model's one-retrain audit (``kgbias_core.tasks.prediction_audit``), or None before it ran."""
    return load_result(model_dir, PREDICTION_AUDIT, params={})


def saved_verifications(model_dir: Path | str) -> pd.DataFrame | None:
    """The model's record of verified plans (:func:`kgbias_core.whatif.plan.append_verifications`), or None."""
    return load_result(model_dir, VERIFICATIONS, params={})


def observed_step_ratio(verifications: pd.DataFrame | None, audit: pd.DataFrame | None = None) -> StepRatio | None:
    """Median of retrained / predicted change of B_gr over a model's verified plans (:func:`saved_verifications`;
    each prediction divided by the ``step_scale`` it was planned with, so the ratio is the unscaled step's) and its
    one-retrain audit (``audit``: :func:`saved_prediction_audit`, the same Newton step on |H|); None when no
    retrain has moved the prediction by more than :data:`RATIO_MIN_CHANGE`."""
    ratios: list[float] = []
    if verifications is not None and len(verifications):
        # a record made before plans had a scale has none: those were planned with the step as computed
        scale = (verifications["step_scale"] if "step_scale" in verifications
                 else pd.Series(1.0, verifications.index)).fillna(1.0)
        predicted = (verifications["predicted"] - verifications["group_bias_before"]) / scale
        actual = verifications["actual"] - verifications["group_bias_before"]
        keep = predicted.abs() > RATIO_MIN_CHANGE
        ratios += (actual[keep] / predicted[keep]).astype(float).tolist()
    if audit is not None and len(audit):
        keep = audit["predicted"].abs() > RATIO_MIN_CHANGE  # the audit's step is always the step as computed
        ratios += (audit.loc[keep, "retrained"] / audit.loc[keep, "predicted"]).astype(float).tolist()
    ratios = [r for r in ratios if math.isfinite(r)]
    if not ratios:
        return None
    value = float(np.clip(np.median(ratios), *STEP_SCALE_RANGE))
    return StepRatio(value=value, n=len(ratios), low=min(ratios), high=max(ratios))


def model_step_ratio(model_dir: Path | str) -> StepRatio | None:
    """:func:`observed_step_ratio` of the model at ``model_dir``: its verified plans and its audit."""
    return observed_step_ratio(saved_verifications(model_dir), saved_prediction_audit(model_dir))
