"""What a model's own retrains said about its what-if prediction, and the step scales read from them (issue 25).

Two records in the model's results folder compare the Newton step (:mod:`kgbias_core.influence.prediction`)
with a masked retrain of the same edit: the one-retrain audit (:data:`PREDICTION_AUDIT`, written by
:mod:`kgbias_core.tasks.prediction_audit`) and the verified plans (:data:`VERIFICATIONS`, written by
:func:`kgbias_core.whatif.plan.append_verifications`). Their ratio retrained / predicted is the step scale
that a removal's step is multiplied by (on L2 the step's change of B_gr instead:
:data:`~kgbias_core.influence.prediction.CHANGE_SCALED_DISTANCES`).

Why a ratio: the step is the optimum's shift (Du Eq. 2 with |H|, METHODS §4); a retrain of finite epochs
moves part of it, and on FB15k-237 the part is much the same across occupations and edit sizes of one model (on the
one-negative model 0.22-0.30 over five planned occupations), while it differs between models (0.82 on the synthetic
graph of the tests). Not on FB13: there it ranged 0.10-0.60 over the top 2% sets of eight occupations (H200,
2026-11-28, docs/results/whatif.md), so one audit's ratio carries badly from one occupation to another. A median
is robust to one odd retrain; the clip keeps one wild ratio from making the planner remove nothing or everything.

Why two scales (:data:`EDITS`, :data:`PLANS`): a plan picks the triples whose step moves B_gr most per triple, and a
retrain moves such a selection by a smaller part of its step than a removal of the top or bottom share of the moving
triples, the kind of edit the audit retrains and the lab, the basket and ``debias`` mostly predict. On the
one-negative FB15k-237 model the two agreed (audit 0.28, plans 0.22-0.30); on the eight-negative default they do
not (audit 0.92, the top/bottom 16% sets of four occupations 0.66-1.70, the five verified plans 0.32-0.62), and one
median of both scaled the lab's removals by 0.52, which left half of those sets outside their interval. So edits are
scaled by the audit and plans by verified plans; a kind with no retrain of its own borrows the other's ratio, and
says so (:attr:`StepRatio.borrowed`), rather than use the step as computed.

Additions (:data:`ADDITIONS`) have a third record, the one-retrain Add audit (:data:`ADD_AUDIT`, written by
:mod:`kgbias_core.tasks.prediction_audit`), with the verified Add plans (rows ``edit`` = "add" of
:data:`VERIFICATIONS`, :mod:`kgbias_core.whatif.plan_addition`; the removal ratios leave them out), and never
borrow: an addition's prediction replays new rows' training and steps the trained rows, a different motion from a
removal's, and the two ratios differ by model in different ways (eight-negative FB15k-237 default: removal audit
0.92, Add retrains 0.58-0.73; one-negative model: removal audit 0.28, Add retrains 2.1-2.3). Its ratio multiplies
the predicted change of B_gr (not a step: the dummies' replay is not one).

A plan for one occupation that has a verified plan of its own reads that occupation's ratio instead of the model's
(``occupation=``): "verify, then plan again" is the way to a plan that lands inside a narrow target, since the
ratios of one model's plans spread 0.32-0.62 on the eight-negative default, wider than its targets allow. It reads
the ratio of the occupation's latest verified plan, the one nearest the next plan, not the median of all of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from kgbias_core.embeddings.config import TrainConfig, default_train_config
from kgbias_core.embeddings.results import load_result
from kgbias_core.embeddings.store import read_config
from kgbias_core.influence.prediction import STAND_IN_BANDS, made_by_current_step

#: The result key of the one-retrain audit in the model's results.
PREDICTION_AUDIT = "prediction_audit"
#: The result key of the one-retrain audit of an addition (Du's Add) in the model's results.
ADD_AUDIT = "add_audit"
#: The result key of the refined prediction's ratio on the removal audit's set and stored retrain
#: (:func:`kgbias_core.tasks.prediction_audit.refit_audit`; no retrain of its own).
REFIT_AUDIT = "refit_audit"
#: The result key of the hinge's temperature set by the removal audit (:func:`kgbias_core.tasks.prediction_audit.
#: hinge_temperature`; no retrain of its own): where it has one, a removal's step is that of |H| plus the hinge's
#: curvature at this temperature, unscaled (:mod:`kgbias_core.influence.hinge_curvature`).
HINGE_TEMPERATURE = "hinge_temperature"
#: The result key of an imported model's stand-in audit (:mod:`kgbias_core.tasks.stand_in_audit`): one retrain of a
#: model trained here on the import's graph, predicted as an import; its ratio scales the import's removals where its
#: distance has a band for it (:data:`~kgbias_core.influence.prediction.STAND_IN_BANDS`).
STAND_IN_AUDIT = "stand_in_audit"
#: The stand-in's training seed: not the seed an import's negatives are re-drawn from (0, the lab's), so the stand-in
#: predicted as an import sees other negatives than it was trained with, as an import does.
STAND_IN_SEED = 1
#: Key of the per-model record of verified plans in the model's results folder.
VERIFICATIONS = "plan_verifications"
#: The observed ratio is clipped to this range: one odd retrain must not make the planner remove nothing or all.
#: Squared L2's and pseudo-Huber's: their audits measured 0.28 (FB15k-237, one negative) to 1.48
#: (local_refit_bands_*.csv).
STEP_SCALE_RANGE = (0.05, 2.0)
#: The range per distance (:func:`step_scale_range`). A retrain moves an L1 or L2 model by more than its step, on
#: every graph measured: audits L1 1.09 (FB15k-237) to 2.30 (synthetic), L2 2.79 (FB15k-237) to 6.54 (synthetic),
#: with single sets up to 3.7 and 27. Clipped at squared L2's 2.0, their scaled step was not the point their bands
#: were fitted on (the fits scaled by the audit as measured), and an L2 model's point fell short by up to 3.3 times.
#: So each range holds every audit measured on its distance, with room of 1.5-1.7 times the largest: an audit
#: out of it is odd for the distance, not for the model. L2's step counts its negatives' curvature in every
#: direction since 2026-12-07 (:func:`~kgbias_core.influence.prediction.absolute_curvature_hvp`), a smaller step:
#: audits 4.39 (FB15k-237) to 11.83 (synthetic; experiments/whatif_accuracy/results/l2_negatives_*), so 20.
STEP_SCALE_RANGES = {"squared_l2": STEP_SCALE_RANGE, "pseudo_huber": STEP_SCALE_RANGE,
                     "l1": (0.05, 4.0), "l2": (0.05, 20.0)}
#: A verified change smaller than this (B_gr units) says nothing about the ratio: left out of it.
RATIO_MIN_CHANGE = 1e-6


#: The two uses of a step scale (:func:`observed_step_ratio`): an edit of the lab, the basket, ``debias`` and the
#: report (read from the audit), and a plan of the planner (read from verified plans).
EDITS = "edits"
PLANS = "plans"
#: The use of an addition's prediction (read from the Add audit only).
ADDITIONS = "additions"
#: Where each use reads its ratio first; for edits and plans, the other source is borrowed only where its own has no
#: retrain.
_SOURCES = {EDITS: "prediction audit", PLANS: "verified plans", ADDITIONS: "Add audit and verified Add plans"}
#: The source of an import's ratio (:func:`stand_in_ratio`).
STAND_IN_SOURCE = "stand-in audit (a model trained here on its graph, seed {seed}, predicted as an import)"
#: The source of a single target's own ratio (:func:`observed_step_ratio` with ``occupation``).
_OWN_SOURCE = "verified plans of this occupation"


@dataclass(frozen=True)
class StepRatio:
    """The ratio of retrained to predicted change of B_gr over a model's own retrains (:func:`observed_step_ratio`)."""

    value: float  # the median, clipped to the distance's range (step_scale_range)
    n: int  # the retrains it is read from
    low: float  # the smallest and largest single ratio
    high: float
    source: str = _SOURCES[EDITS]  # the record the ratios come from, in words
    borrowed: bool = False  # read from the other use's record: this use has no retrain of its own yet
    latest: bool = False  # the value is the latest ratio of the record (one occupation's own plans), not the median
    # edits only: the hinge's temperature (units of the margin) at which the audit set's step met its retrain, where
    # it was searched and found (:data:`HINGE_TEMPERATURE`); a removal is then predicted with it and not scaled
    temperature: float | None = None

    def describe(self) -> str:
        """Where the scale comes from, in one clause (the lab, ``plan`` and ``debias`` print it)."""
        if self.temperature is not None:
            return (f"the hinge's curvature at T = {self.temperature:.2f} margins, the temperature at which the step "
                    f"of this model's {self.source} met its retrain (its step as computed: ratio {self.value:.2f})")
        if self.latest:
            return (f"the retrained/predicted ratio of the latest of {self.n} retrain(s) in this model's {self.source}"
                    f" (single ratios {self.low:.2f} to {self.high:.2f})")
        text = (f"the median retrained/predicted ratio of {self.n} retrain(s) in this model's {self.source}"
                f" (single ratios {self.low:.2f} to {self.high:.2f})")
        return text + (", borrowed: none of its own kind has been retrained yet" if self.borrowed else "")


def step_scale_range(distance: str = "squared_l2") -> tuple[float, float]:
    """The range a step scale of a model of ``distance`` is clipped to (:data:`STEP_SCALE_RANGES`; a distance not
    listed takes squared L2's)."""
    return STEP_SCALE_RANGES.get(distance, STEP_SCALE_RANGE)


def clipped_scale(ratio: float, distance: str = "squared_l2") -> float:
    """``ratio`` clipped to ``distance``'s range (:func:`step_scale_range`): the one clip of every step scale."""
    return float(np.clip(ratio, *step_scale_range(distance)))


def saved_prediction_audit(model_dir: Path | str) -> pd.DataFrame | None:
    """The model's one-retrain audit (``kgbias_core.tasks.prediction_audit``), or None before it ran, and None where
    it predicted with a step the lab no longer makes (:func:`~kgbias_core.influence.prediction.made_by_current_step`:
    its ratio is not this step's). Such an audit's retrain stands: :func:`outdated_prediction_audit` reads it, and
    the audit task predicts its set again without retraining."""
    audit, outdated = _stored_audit(model_dir)
    return None if outdated else audit


def outdated_prediction_audit(model_dir: Path | str) -> pd.DataFrame | None:
    """The model's stored removal audit where its prediction was made with a step the lab no longer makes (else
    None): its set and retrain, for the audit task to predict again (:func:`saved_prediction_audit`)."""
    audit, outdated = _stored_audit(model_dir)
    return audit if outdated else None


def _stored_audit(model_dir: Path | str) -> tuple[pd.DataFrame | None, bool]:
    """The stored removal audit as written (None before it ran), and whether its step is not today's. An audit
    written without the estimator column (a test's, a hand-made one) names no step: taken as today's."""
    audit = load_result(model_dir, PREDICTION_AUDIT, params={})
    if audit is None or not len(audit) or "estimator" not in audit:
        return audit, False
    distance = str(read_config(model_dir).get("distance") or "squared_l2")
    return audit, not made_by_current_step(str(audit.iloc[0]["estimator"]), distance)


def saved_add_audit(model_dir: Path | str) -> pd.DataFrame | None:
    """The model's one-retrain audit of an addition (``kgbias_core.tasks.prediction_audit``), or None before it ran."""
    return load_result(model_dir, ADD_AUDIT, params={})


def use_for(kind: str) -> str:
    """The use whose ratio scales an edit of ``kind`` ("add" or "remove"): :data:`ADDITIONS` or :data:`EDITS`."""
    return ADDITIONS if kind == "add" else EDITS


def saved_verifications(model_dir: Path | str) -> pd.DataFrame | None:
    """The model's record of verified plans (:func:`kgbias_core.whatif.plan.append_verifications`), or None."""
    return load_result(model_dir, VERIFICATIONS, params={})


def verified_of_kind(verifications: pd.DataFrame | None, kind: str) -> pd.DataFrame | None:
    """The rows of a record of verified plans whose edit is of ``kind`` ("remove" or "add"; a record made before Add
    plans has no ``edit`` column: all removals)."""
    if verifications is None:
        return None
    edit = (verifications["edit"].fillna("remove") if "edit" in verifications
            else pd.Series("remove", index=verifications.index))
    return verifications[edit == kind]


def current_step_rows(verifications: pd.DataFrame | None, distance: str) -> pd.DataFrame | None:
    """The verified plans predicted with the step the lab makes today on a model of ``distance``
    (:func:`~kgbias_core.influence.prediction.made_by_current_step` of each row's estimator; a row without one is from
    a record made before plans named it). A plan of an L2 model verified before its step changed (2026-12-07) holds
    that step's ratio, as an audit of that time does (:func:`saved_prediction_audit`): no ratio of today's."""
    if verifications is None:
        return None
    named = (verifications["estimator"].fillna("").astype(str) if "estimator" in verifications
             else pd.Series("", index=verifications.index))
    return verifications[[made_by_current_step(estimator, distance) for estimator in named]]


def plan_ratios(verifications: pd.DataFrame | None) -> list[float]:
    """Retrained / unscaled predicted change of B_gr of each verified plan (each prediction divided by the
    ``step_scale`` it was planned with); a plan predicted to move less than :data:`RATIO_MIN_CHANGE` says nothing.
    Pass one kind of edit (:func:`verified_of_kind`)."""
    if verifications is None or not len(verifications):
        return []
    # a record made before plans had a scale has none: those were planned with the step as computed
    scale = (verifications["step_scale"] if "step_scale" in verifications
             else pd.Series(1.0, verifications.index)).fillna(1.0)
    predicted = (verifications["predicted"] - verifications["group_bias_before"]) / scale
    actual = verifications["actual"] - verifications["group_bias_before"]
    keep = predicted.abs() > RATIO_MIN_CHANGE
    return _finite((actual[keep] / predicted[keep]).astype(float).tolist())


def audit_ratios(audit: pd.DataFrame | None) -> list[float]:
    """Retrained / predicted change of the audit's edit(s) (the removal audit's or the Add audit's): an audit
    predicts with the step as computed."""
    if audit is None or not len(audit):
        return []
    keep = audit["predicted"].abs() > RATIO_MIN_CHANGE
    return _finite((audit.loc[keep, "retrained"] / audit.loc[keep, "predicted"]).astype(float).tolist())


def _finite(ratios: list[float]) -> list[float]:
    return [r for r in ratios if math.isfinite(r)]


def observed_step_ratio(verifications: pd.DataFrame | None, audit: pd.DataFrame | None = None, *,
                        use: str, occupation: str | None = None,
                        add_audit: pd.DataFrame | None = None, distance: str = "squared_l2") -> StepRatio | None:
    """The step scale for ``use`` (:data:`EDITS`, :data:`PLANS` or :data:`ADDITIONS`): the median of retrained /
    predicted change of B_gr over that use's own record (:func:`audit_ratios` of ``audit`` or of ``add_audit``,
    :func:`plan_ratios` of ``verifications``); for edits and plans else over the other's (borrowed); None when no
    retrain has moved a prediction by more than :data:`RATIO_MIN_CHANGE`. ``occupation`` (a label; plans only): the
    plan's single target, whose own verified plans, where it has any, give the ratio: the latest one's. Only plans
    predicted with today's step of ``distance`` count (:func:`current_step_rows`). The value is clipped to the model's
    ``distance``'s range (:func:`step_scale_range`)."""
    if use not in _SOURCES:
        raise ValueError(f"a step scale is read for {EDITS!r}, {PLANS!r} or {ADDITIONS!r}, not {use!r}")
    verifications = current_step_rows(verifications, distance)
    if use == ADDITIONS:
        ratios = audit_ratios(add_audit) + plan_ratios(verified_of_kind(verifications, "add"))
        return _median(ratios, source=_SOURCES[ADDITIONS], borrowed=False, distance=distance) if ratios else None
    verifications = verified_of_kind(verifications, "remove")
    if use == PLANS and occupation is not None and verifications is not None and len(verifications):
        own = plan_ratios(verifications[verifications["occupation"] == occupation])
        if own:
            # the latest, not the median: the plan verified last is the nearest to the next one (verify, then plan
            # again), and the median of older, different plans can hold the loop still (FB15k-237's Voice Actor:
            # five plans 0.26-0.32, median 0.32, the latest 0.26; planned at 0.32 it took the same triples again)
            latest = clipped_scale(own[-1], distance)
            return StepRatio(value=latest, n=len(own), low=min(own), high=max(own), source=_OWN_SOURCE,
                             latest=True)
    read = {EDITS: audit_ratios(audit), PLANS: plan_ratios(verifications)}
    other = PLANS if use == EDITS else EDITS
    chosen, borrowed = (use, False) if read[use] else (other, True)
    ratios = read[chosen]
    return _median(ratios, source=_SOURCES[chosen], borrowed=borrowed, distance=distance) if ratios else None


def _median(ratios: list[float], *, source: str, borrowed: bool, distance: str) -> StepRatio:
    value = clipped_scale(float(np.median(ratios)), distance)
    return StepRatio(value=value, n=len(ratios), low=min(ratios), high=max(ratios), source=source, borrowed=borrowed)


def stand_in_config(config: dict) -> TrainConfig:
    """The stand-in of an imported model whose config.json is ``config``: the default training of its data set
    (:func:`~kgbias_core.embeddings.config.default_train_config`; a user graph gets the small-graph default) with the
    import's distance and :data:`STAND_IN_SEED`. Not the import's own settings: its engine's margin, epochs and
    negatives are not kgbias's, and the stand-in measures how the graph's retrains meet the import's kind of step."""
    return replace(default_train_config(str(config.get("dataset") or "")),
                   distance=str(config.get("distance") or "squared_l2"), seed=STAND_IN_SEED)


def stand_in_params(config: dict) -> dict:
    """What a stored stand-in audit was made from: the stand-in's config and the negatives the import re-draws (a
    later default training or re-import makes it stale)."""
    return {"stand_in": stand_in_config(config).to_dict(),
            "imported_negatives": int(config.get("negatives_per_triple") or 1)}


def saved_stand_in_audit(model_dir: Path | str, config: dict | None = None) -> pd.DataFrame | None:
    """The imported model's stand-in audit (:data:`STAND_IN_AUDIT`), or None (not made, made from another stand-in,
    or no import). ``config``: its config.json where already read."""
    config = read_config(model_dir) if config is None else config
    if not config.get("imported_from"):
        return None
    return load_result(model_dir, STAND_IN_AUDIT, params=stand_in_params(config))


def stand_in_ratio(model_dir: Path | str, config: dict) -> StepRatio | None:
    """An imported model's step scale for edits (``config``: its config.json): its stand-in audit's ratio, clipped
    to the distance's range, where its distance has a band for it (:data:`~kgbias_core.influence.prediction.
    STAND_IN_BANDS`); else None (the step at its distance's prior, or as computed)."""
    distance = str(config.get("distance") or "squared_l2")
    if distance not in STAND_IN_BANDS:
        return None
    audit = saved_stand_in_audit(model_dir, config)
    if audit is None or not len(audit):
        return None
    ratio = float(audit.iloc[0]["ratio"])
    if not math.isfinite(ratio):
        return None
    return StepRatio(value=clipped_scale(ratio, distance), n=1, low=ratio, high=ratio,
                     source=STAND_IN_SOURCE.format(seed=int(audit.iloc[0]["seed"])))


def model_step_ratio(model_dir: Path | str, *, use: str, occupation: str | None = None) -> StepRatio | None:
    """:func:`observed_step_ratio` for ``use`` (and a plan's single target ``occupation``) of the model at
    ``model_dir``: its audits and its verified plans, clipped to its distance's range; for edits read from the audit,
    with the hinge's temperature where the audit has one (:func:`saved_hinge_temperature`). An imported model's
    edits: its stand-in audit (:func:`stand_in_ratio`), no retrain of its own being possible."""
    config = read_config(model_dir)
    distance = str(config.get("distance") or "squared_l2")
    if config.get("imported_from"):
        return stand_in_ratio(model_dir, config) if use == EDITS else None
    if use == ADDITIONS:
        return observed_step_ratio(saved_verifications(model_dir), use=use, add_audit=saved_add_audit(model_dir),
                                   distance=distance)
    audit = saved_prediction_audit(model_dir)
    ratio = observed_step_ratio(saved_verifications(model_dir), audit, use=use, occupation=occupation,
                                distance=distance)
    if use != EDITS or ratio is None or ratio.borrowed:
        return ratio
    stored = saved_hinge_temperature(model_dir, audit)
    temperature = None if stored is None else float(stored.iloc[0]["temperature"])
    return ratio if temperature is None or not math.isfinite(temperature) else replace(ratio, temperature=temperature)


def hinge_temperature_params(audit: pd.DataFrame) -> dict:
    """What a stored temperature was found from: the removal audit's set and retrain (a new audit makes it stale)."""
    row = audit.iloc[0]
    return {"occupation": str(row["occupation"]), "k": int(row["k"]), "retrained": float(row["retrained"])}


def saved_hinge_temperature(model_dir: Path | str, audit: pd.DataFrame | None) -> pd.DataFrame | None:
    """The hinge's temperature found from the removal ``audit`` (:data:`HINGE_TEMPERATURE`), or None (no audit, not
    searched yet, or searched from another audit). NaN temperature: searched, and no temperature met the retrain."""
    if audit is None or not len(audit):
        return None
    return load_result(model_dir, HINGE_TEMPERATURE, params=hinge_temperature_params(audit))


def edit_calibration(ratio: StepRatio | None, *, prior: float | None = None) -> tuple[float, float | None, bool]:
    """(scale, temperature, prior) of an edit's prediction from the model's ratio for its kind: the hinge's
    temperature, the step unscaled, where the audit set one; else the ratio's scale and no temperature; before any
    retrain (``ratio`` None) the ``prior`` temperature where the model has one
    (:func:`~kgbias_core.influence.hinge_curvature.prior_temperature`), else the step as computed. An addition's
    ratio never has a temperature, and an addition is given no prior: (its scale, None, False)."""
    if ratio is None:
        return 1.0, prior, prior is not None
    return (1.0, ratio.temperature, False) if ratio.temperature is not None else (ratio.value, None, False)


def model_edit_calibration(model_dir: Path | str, kind: str = "remove") -> tuple[float, float | None, bool]:
    """:func:`edit_calibration` of the model at ``model_dir`` for an edit of ``kind``: its ratio
    (:func:`model_step_ratio`) and, for a removal, its prior temperature from its config. The lab, the basket,
    ``debias`` and the report read it here.

    A model with a prior temperature whose removal audit is stored but not yet searched for its own temperature
    (the minute between the audit's retrain and the end of its search, or an audit stored before the search
    existed) keeps the prior. Its audit's scale would be a third estimator, shown for that minute only. The
    lab's figure would jump twice, prior to scale to temperature, and the scale is no nearer: retrained / point
    within 30% on 59% / 64% / 43% of the sets of FB15k-237's one-negative model, the synthetic default and FB13's
    default, against 72% / 83% / 29% at the prior T (whatif.md, 2026-12-04). A search that found no temperature
    (stored NaN) gives the audit's scale, as before."""
    from kgbias_core.influence.hinge_curvature import prior_temperature

    prior = None
    if kind == "remove":
        config = read_config(model_dir)
        prior = prior_temperature(distance=str(config.get("distance") or "squared_l2"),
                                  negatives_per_triple=config.get("negatives_per_triple"),
                                  imported=bool(config.get("imported_from")))
    ratio = model_step_ratio(model_dir, use=use_for(kind))
    if (prior is not None and ratio is not None and ratio.temperature is None and not ratio.borrowed
            and saved_hinge_temperature(model_dir, saved_prediction_audit(model_dir)) is None):
        ratio = None  # audited, its temperature not searched yet: the prior until the audit's own T lands
    return edit_calibration(ratio, prior=prior)
