"""The one-retrain audit of a model's what-if prediction (issue 25): the Newton step against one masked retrain.

The 13-retrain calibration fitted a scale for the old closed form; the Newton step
(:mod:`kgbias_core.influence.prediction`) needs none, so no model calibrates by default any more. What a
model still gets, cheaply, is one check of its own: the prediction of one edit against the masked retrain
of that edit, stored in the model's results and shown in the lab. One retrain: the base's B_gr is the
model's own (a masked retrain with nothing removed reproduces it from the same seed and device kind).

The Add audit does the same for an addition (Du's Add, c = 0.5, on the removal audit's occupation where Add gives
it a dummy): the replayed-then-stepped prediction against one retrain of the edited graph, B_gr after over the
edited groups, dummies counted. Its ratio scales the model's Add predictions (:mod:`kgbias_core.whatif.step_ratio`),
since the ratio differs by model far more than the estimator's band allows (0.58-0.73 on FB15k-237's eight-negative
default, 2.1-2.3 on the one-negative model).

Once the removal audit is stored, the hinge's temperature is searched on its set and retrain (:func:`hinge_temperature`,
no retrain: a dozen or so Newton steps): the temperature T at which the step of |H| plus the hinge's curvature meets
the retrain (:mod:`kgbias_core.influence.hinge_curvature`). Where one is found, the model's removals are predicted
with it, unscaled, in place of the audit's scale (:func:`kgbias_core.whatif.step_ratio.edit_calibration`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import torch

from kgbias_core.analysis import ModelAnalysis
from kgbias_core.device import resolve_device
from kgbias_core.embeddings.results import load_result, save_result
from kgbias_core.embeddings.store import is_model_dir, load_model, read_config
from kgbias_core.errors import (
    ADD_AUDIT_KEPT,
    ADD_AUDIT_NO_OCCUPATION,
    PREDICTION_AUDIT_KEPT,
    PREDICTION_AUDIT_NO_OCCUPATION,
    MeasureError,
)
from kgbias_core.influence.hinge_curvature import HINGE_DISTANCES, audit_temperature, hinge_curvature_hvp
from kgbias_core.influence.local_refit import READ_PERSONS, REFIT_ITERATIONS
from kgbias_core.influence.prediction import (
    PREDICTION_TOLERANCE,
    WhatIfPrediction,
    _damping,
    _negatives_of,
    newton_change,
    predict_removal,
)
from kgbias_core.influence.refit_prediction import NO_REFINED, drift_refusal, refit_change, refit_refusal
from kgbias_core.influence.retraining_check import masked_retrain_bias, removal_set
from kgbias_core.jobs import Progress
from kgbias_core.measures.group_bias import group_bias
from kgbias_core.measures.groups import occupation_groups
from kgbias_core.tasks.base import Task, _key, check_retrains, model_retrain_seconds
from kgbias_core.tasks.whatif import repredict_curves
from kgbias_core.whatif.edits import add_edit, predict_edit, retrain
from kgbias_core.whatif.step_ratio import (
    ADD_AUDIT,
    HINGE_TEMPERATURE,
    PREDICTION_AUDIT,
    RATIO_MIN_CHANGE,
    REFIT_AUDIT,
    clipped_scale,
    hinge_temperature_params,
    outdated_prediction_audit,
    saved_hinge_temperature,
    saved_prediction_audit,
)

#: The audited edit: the top ``AUDIT_SHARE`` of the occupation's triples that move B_gr (the bench's middle size).
AUDIT_SHARE = 0.16
#: The columns of the stored audit.
AUDIT_COLUMNS = ("occupation", "name", "k", "moving", "predicted", "low", "high", "retrained", "inside", "estimator")
#: The Add audit's c (Du's, and the lab's default).
ADD_AUDIT_C = 0.5
#: The columns of the stored Add audit.
ADD_AUDIT_COLUMNS = ("occupation", "name", "dummies", "predicted", "low", "high", "retrained", "inside",
                     "estimator")


def audit_index(n_male: torch.Tensor, n_female: torch.Tensor) -> int:
    """Index of the audited occupation among counts ``n_male``, ``n_female`` [O]: the one whose rarer gender is
    largest (ties: the larger occupation); -1 where none has both genders.

    Why the rarer gender, not the size: the audit's ratio is meant to carry to the edits of other occupations, and the
    top 16% of an occupation with few persons of one gender is an edit concentrated on those few. FB13's largest
    occupation with 5 of each gender, Politician (4,235 men, 136 women), gave the refined prediction a ratio of 1.32,
    while the 8 sets of Engineer, Diplomat, Writer and Sex Worker gave 1.07-1.27 (eight negatives, this project's
    CPU, docs/results/whatif.md); Writer (2,974 men, 673 women), chosen by this rule, gives 1.14. The rule picks the
    same occupation as the old one on FB15k-237 (Actor), on the tests' graph and on the synthetic data set's (actor)."""
    smaller = torch.minimum(n_male, n_female)
    if int(smaller.max()) < 1:
        return -1
    size = n_male + n_female
    return int((smaller * (int(size.max()) + 1) + size).argmax())  # the rarer gender first, then the size


def audit_occupation(analysis: ModelAnalysis) -> str:
    """The label of the audited occupation (:func:`audit_index`): a group the estimator is meant to serve, with as
    many persons of each gender as the graph has, not a corner case."""
    groups = analysis.groups
    index = audit_index(groups.n_male, groups.n_female)
    if index < 0:
        raise MeasureError(PREDICTION_AUDIT_NO_OCCUPATION.format(model=analysis.model.name))
    return groups.labels[index]


def audit_set(analysis: ModelAnalysis, occupation: str) -> tuple[int, int, torch.Tensor]:
    """The audited edit of ``occupation``: (moving, k, removed). ``moving`` counts its training triples that move
    B_gr (closed-form influence != 0), ``k`` = max(1, round(:data:`AUDIT_SHARE` moving)), and ``removed`` [k] holds
    the indices of the k that push B_gr up most (:func:`~kgbias_core.influence.retraining_check.removal_set`, top).
    The one home of the audit's set: the audit, and the studies and tests that rebuild it, all call this."""
    influence = analysis.influence(occupation)
    moving = int((influence != 0).sum())
    k = max(1, round(AUDIT_SHARE * moving))
    return moving, k, removal_set(influence, kind="top", k=k)


def prediction_audit(analysis: ModelAnalysis, *, should_stop=None, outdated: pd.DataFrame | None = None
                     ) -> pd.DataFrame:
    """One row (:data:`AUDIT_COLUMNS`): the Newton prediction of removing :func:`audit_set` of
    :func:`audit_occupation`, and the change one masked retrain gives. ``outdated``: the model's stored audit made
    with a step the lab no longer makes (:func:`~kgbias_core.whatif.step_ratio.outdated_prediction_audit`): where it
    holds this set (same occupation, k and moving triples), its retrain stands and only the prediction is new."""
    occupation = audit_occupation(analysis)
    index = analysis.groups.index(occupation)
    moving, k, removed = audit_set(analysis, occupation)
    prediction = predict_removal(analysis, occupation, removed)
    if outdated is not None and _holds_set(outdated, occupation=occupation, k=k, moving=moving):
        retrained = float(outdated.iloc[0]["retrained"])
    else:
        after = masked_retrain_bias(analysis.model, removed=removed, groups=analysis.groups, should_stop=should_stop)
        retrained = float(after[index]) - float(analysis.group_bias(occupation))
    return _audit_row(prediction, retrained, AUDIT_COLUMNS, occupation=occupation,
                      name=analysis.groups.names[index], k=k, moving=moving)


def _holds_set(audit: pd.DataFrame, *, occupation: str, k: int, moving: int) -> bool:
    row = audit.iloc[0]
    return str(row["occupation"]) == occupation and int(row["k"]) == k and int(row["moving"]) == moving


def _audit_row(prediction: WhatIfPrediction, retrained: float, columns: Sequence[str], **fields) -> pd.DataFrame:
    """An audit's one row: ``fields`` (what was edited), then the prediction, the retrained change and the verdict."""
    return pd.DataFrame([{
        **fields, "predicted": prediction.point, "low": prediction.low, "high": prediction.high,
        "retrained": retrained, "inside": bool(prediction.low <= retrained <= prediction.high),
        "estimator": prediction.estimator,
    }], columns=list(columns))


def _audit_task(model_dir: Path | str, audit, *, key: str, what: str, message: str, kept: str,
                device: torch.device | str | None, then=None, outdated=None) -> Task[pd.DataFrame]:
    """The task of one audit (``audit``: analysis -> its row, one retrain) of the model at ``model_dir``: the row
    stored in the model's results under ``key``; ``then(analysis)`` runs after it is stored. ``outdated``: model_dir
    -> the stored audit whose retrain stands, read when the task runs (then no retrain, and ``audit`` gets it)."""
    device = resolve_device(device)

    def run(progress: Progress) -> pd.DataFrame:
        # An outdated audit's retrain stands: no retrain, so nothing to refuse. (Its set is the audit's today unless
        # the audit's rule changed; then prediction_audit retrains, as the model's first audit once passed this check.)
        stored = None if outdated is None else outdated(model_dir)
        if stored is None:
            check_retrains(model_dir, what=what, retrains=1)
        analysis = ModelAnalysis(load_model(model_dir, device=device))
        progress.update(stage="retraining" if stored is None else "predicting",
                        message=message if stored is None else AUDIT_PREDICTED_AGAIN)
        again = {} if stored is None else {"outdated": stored}  # the add audit takes no outdated one
        frame = audit(analysis, should_stop=progress.should_stop, **again)
        save_result(model_dir, key, frame, params={})
        if then is not None:
            then(analysis)
        return frame

    return Task(key=_key(key, model_dir), run=run, kept=kept.format(name=Path(model_dir).name))


def prediction_audit_task(model_dir: Path | str, *, device: torch.device | str | None = None) -> Task[pd.DataFrame]:
    """Audit the model at ``model_dir`` (:func:`prediction_audit`, one masked retrain; none where its stored audit
    was made with a step the lab no longer makes: that audit's set is predicted again) and store the row; then the
    hinge's temperature from it (:func:`hinge_temperature`); on a model the refined prediction is offered on, its refit
    audit too (:func:`refit_scale`: one refit of the audit's set,
    seconds), so the lab's first refined prediction does not wait for it; then the stored removal curves are
    predicted again at the calibration the audit set (:func:`~kgbias_core.tasks.whatif.repredict_curves`)."""

    def refit_too(analysis: ModelAnalysis) -> None:
        hinge_temperature(model_dir, analysis)  # no retrain: a dozen or so Newton steps of the audit's set
        if refit_refusal(analysis) is None:
            try:
                refit_scale(model_dir, analysis)
            except MeasureError:  # rows not at their optimum: no refined prediction, the audit itself stands
                pass
        repredict_curves(model_dir, analysis)  # the stored removal curves, at the calibration the audit set

    return _audit_task(model_dir, prediction_audit, key=PREDICTION_AUDIT, what="the prediction audit",
                       message="one masked retrain against the Newton-step prediction", kept=PREDICTION_AUDIT_KEPT,
                       device=device, then=refit_too, outdated=outdated_prediction_audit)


def add_audit_occupation(analysis: ModelAnalysis) -> str:
    """The removal audit's occupation (:func:`audit_occupation`) where Add (c = :data:`ADD_AUDIT_C`) gives it a dummy,
    else the largest occupation with persons of both genders to which it gives one."""
    groups = analysis.groups
    usable = [int(m) >= 1 and int(f) >= 1 and round(ADD_AUDIT_C * abs(int(m) - int(f))) >= 1  # add_edit's count
              for m, f in zip(groups.n_male.tolist(), groups.n_female.tolist(), strict=True)]
    if not any(usable):
        raise MeasureError(ADD_AUDIT_NO_OCCUPATION.format(model=analysis.model.name, c=ADD_AUDIT_C))
    first = audit_occupation(analysis)
    if usable[groups.index(first)]:
        return first
    size = (groups.n_male + groups.n_female).tolist()
    return groups.labels[max((i for i, ok in enumerate(usable) if ok), key=lambda i: size[i])]


def add_audit(analysis: ModelAnalysis, *, should_stop=None) -> pd.DataFrame:
    """One row (:data:`ADD_AUDIT_COLUMNS`): the prediction of Du's Add on :func:`add_audit_occupation` (as computed,
    unscaled) and the change one retrain of the edited graph gives, B_gr after over its groups (dummies counted,
    as :func:`~kgbias_core.whatif.runs.bias_change` reads a retrained Add)."""
    occupation = add_audit_occupation(analysis)
    edit = add_edit(analysis.model, occupation, c=ADD_AUDIT_C)
    prediction = predict_edit(analysis, edit)
    run = retrain(analysis.model, edit, name=f"{analysis.model.name}--add-audit", should_stop=should_stop)
    groups = occupation_groups(run)
    after = group_bias(entity_embeddings=run.entity_embeddings, relation_embeddings=run.relation_embeddings,
                       groups=groups, distance=run.config.distance)[groups.index(occupation)]
    retrained = float(after) - float(analysis.group_bias(occupation))
    return _audit_row(prediction, retrained, ADD_AUDIT_COLUMNS, occupation=occupation,
                      name=analysis.groups.names[analysis.groups.index(occupation)], dummies=len(edit.added_entities))


def add_audit_task(model_dir: Path | str, *, device: torch.device | str | None = None) -> Task[pd.DataFrame]:
    """Audit the model at ``model_dir``'s Add prediction (:func:`add_audit`, one retrain) and store the row."""
    return _audit_task(model_dir, add_audit, key=ADD_AUDIT, what="the Add audit",
                       message="one retrain with Add's dummies against the prediction", kept=ADD_AUDIT_KEPT,
                       device=device)


#: The columns of the refined prediction's audit.
REFIT_AUDIT_COLUMNS = ("occupation", "name", "k", "refined", "retrained", "ratio", "seconds")


def _refit_audit_params(audit: pd.DataFrame) -> dict:
    """What a stored refit audit was made from: the removal audit's set and retrain, and the refit's settings (a
    new audit, or another cap, makes it stale)."""
    row = audit.iloc[0]
    return {"occupation": str(row["occupation"]), "k": int(row["k"]), "retrained": float(row["retrained"]),
            "persons": READ_PERSONS, "iterations": REFIT_ITERATIONS}


def saved_refit_audit(model_dir: Path | str, audit: pd.DataFrame) -> pd.DataFrame | None:
    """The refit audit of the removal ``audit`` stored beside the model, or None (not made, or made from another)."""
    return load_result(model_dir, REFIT_AUDIT, params=_refit_audit_params(audit))


def refit_audit(analysis: ModelAnalysis, audit: pd.DataFrame) -> pd.DataFrame:
    """One row (:data:`REFIT_AUDIT_COLUMNS`): the refined prediction (:func:`~kgbias_core.influence.refit_prediction.
    refit_change`, unscaled) of the removal audit's own set, the audit's stored retrained change, and their ratio
    retrained / refined, the refined prediction's scale. No retrain: the audit's is read. NaN ratio where the
    refined change is below :data:`~kgbias_core.whatif.step_ratio.RATIO_MIN_CHANGE`; a MeasureError where the
    refit is not offered on this model (its reason)."""
    row = audit.iloc[0]
    occupation = str(row["occupation"])
    reason = refit_refusal(analysis, occupation) or drift_refusal(analysis, occupation)
    if reason is not None:
        raise MeasureError(NO_REFINED.format(reason=reason))
    removed = removal_set(analysis.influence(occupation), kind="top", k=int(row["k"]))
    start = time.perf_counter()
    refined = refit_change(analysis, occupation, removed)
    retrained = float(row["retrained"])
    ratio = retrained / refined if abs(refined) >= RATIO_MIN_CHANGE else float("nan")
    return pd.DataFrame([{"occupation": occupation, "name": str(row["name"]), "k": int(row["k"]),
                          "refined": refined, "retrained": retrained, "ratio": ratio,
                          "seconds": time.perf_counter() - start}], columns=list(REFIT_AUDIT_COLUMNS))


#: Why there is no refined prediction on a model the refit is offered on, before its removal audit.
NO_REFIT_AUDIT = "it takes its scale from the model's prediction audit, which has not run (kgbias prepare runs it)"


def refit_not_offered(model_dir: Path | str, analysis: ModelAnalysis, occupation: str) -> str | None:
    """Why the refined prediction of ``occupation`` is not offered on the model at ``model_dir``, in words, or None
    where it is: the model's reason (:func:`~kgbias_core.influence.refit_prediction.refit_refusal`), or
    :data:`NO_REFIT_AUDIT` before its removal audit, which gives the scale (an import, which has none, is offered
    its refit at its prior scale). The lab, the basket, ``debias`` and the
    report decide the same way."""
    why = refit_refusal(analysis, occupation)
    if why is None and analysis.negatives.exact and saved_prediction_audit(model_dir) is None:
        return NO_REFIT_AUDIT  # an import has no audit to wait for: its refined prediction takes a prior scale
    return why


def refit_offer(model_dir: Path | str, analysis: ModelAnalysis, occupation: str) -> tuple[float | None, str | None]:
    """(the refined prediction's scale, None) where it is given on ``occupation`` (:func:`refit_scale`: its refit
    audit made first where missing, seconds; 1 on an import, which no retrain here can audit: its prior scale is
    applied by :func:`~kgbias_core.influence.refit_prediction.refit_removal_prediction`), else (None, why
    not): :func:`refit_not_offered`, or the rows B_gr reads not at their optimum
    (:func:`~kgbias_core.influence.refit_prediction.drift_refusal`: the occupation's unedited refit, seconds, which
    its prediction then shares)."""
    why = refit_not_offered(model_dir, analysis, occupation)
    if why is not None:
        return None, why
    why = drift_refusal(analysis, occupation)  # the occupation's unedited refit, which its prediction reads anyway
    if why is not None:
        return None, why
    if not analysis.negatives.exact:  # an import: no audit; refit_removal_prediction applies its prior scale
        return 1.0, None
    try:
        return refit_scale(model_dir, analysis), None
    except MeasureError as exc:  # the audit occupation's rows are not at their optimum, though this one's are
        return None, str(exc)


def refit_scale(model_dir: Path | str, analysis: ModelAnalysis) -> float | None:
    """The refined prediction's scale for the model at ``model_dir``: the ratio of its refit audit, made once (one
    refit of the audit's set, seconds) and stored, clipped to the step scale's range; 1 (the refit as computed)
    where its ratio is NaN; None before the removal audit ran."""
    stored = _made_from_audit(model_dir, analysis, key=REFIT_AUDIT, params_of=_refit_audit_params, make=refit_audit)
    if stored is None:
        return None
    ratio = float(stored.iloc[0]["ratio"])
    return clipped_scale(ratio) if math.isfinite(ratio) else 1.0


def temperature_searched(model_dir: Path | str) -> bool:
    """Whether the stored removal audit of the model at ``model_dir`` has had its temperature searched (or needs none:
    a distance the hinge's curvature is not written for). An audit stored before the search existed has not."""
    audit = saved_prediction_audit(model_dir)
    if audit is None:
        return False
    if read_config(model_dir).get("distance", "squared_l2") not in HINGE_DISTANCES:
        return True
    return saved_hinge_temperature(model_dir, audit) is not None


def hinge_temperature_task(model_dir: Path | str, *, device: torch.device | str | None = None) -> Task[float | None]:
    """The hinge's temperature searched on the model's stored removal audit (:func:`hinge_temperature`), no retrain:
    for an audit stored before the search existed (``kgbias prepare`` runs it; a dozen or so Newton steps)."""
    device = resolve_device(device)

    def run(progress: Progress) -> float | None:
        progress.update(stage="searching", message="the hinge's temperature on the audit's set (no retrain)")
        analysis = ModelAnalysis(load_model(model_dir, device=device))
        temperature = hinge_temperature(model_dir, analysis)
        repredict_curves(model_dir, analysis)  # the stored removal curves, at the temperature found
        return temperature

    return Task(key=_key(HINGE_TEMPERATURE, model_dir), run=run)


#: The columns of the hinge's temperature record: the audit's set and retrain, its |H| step, the temperature found
#: (NaN: none met the retrain), the step there, the Newton steps the search took and its seconds.
HINGE_TEMPERATURE_COLUMNS = ("occupation", "name", "k", "retrained", "predicted", "temperature", "step", "solves",
                             "seconds")


def hinge_temperature_audit(analysis: ModelAnalysis, audit: pd.DataFrame) -> pd.DataFrame:
    """One row (:data:`HINGE_TEMPERATURE_COLUMNS`): the temperature at which the audit set's step with the hinge's
    curvature meets its stored retrain (:func:`~kgbias_core.influence.hinge_curvature.audit_temperature`; each step
    at the lab's CG tolerance, B_gr exact at it). No retrain: the audit's is read."""
    row = audit.iloc[0]
    occupation = str(row["occupation"])
    index = analysis.groups.index(occupation)
    removed = removal_set(analysis.influence(occupation), kind="top", k=int(row["k"]))
    model, negatives, base = analysis.model, _negatives_of(analysis), analysis.absolute_hvp
    start = time.perf_counter()

    def step_at(temperature: float) -> float:  # each T's operator built and dropped: one in memory at a time
        hvp = hinge_curvature_hvp(model, temperature, base=base, negatives=negatives)
        return newton_change(model, removed, groups=analysis.groups, occupation_index=index, damping=_damping(model),
                             negatives=negatives, tolerance=PREDICTION_TOLERANCE, hvp=hvp)

    retrained = float(row["retrained"])
    temperature, read = audit_temperature(step_at, retrained)
    return pd.DataFrame([{"occupation": occupation, "name": str(row["name"]), "k": int(row["k"]),
                          "retrained": retrained, "predicted": float(row["predicted"]),
                          "temperature": float("nan") if temperature is None else temperature,
                          "step": float("nan") if temperature is None else step_at(temperature),
                          "solves": len(read) + (temperature is not None),
                          "seconds": time.perf_counter() - start}], columns=list(HINGE_TEMPERATURE_COLUMNS))


def hinge_temperature(model_dir: Path | str, analysis: ModelAnalysis) -> float | None:
    """The hinge's temperature of the model at ``model_dir``, searched once on its removal audit
    (:func:`hinge_temperature_audit`) and stored (:data:`~kgbias_core.whatif.step_ratio.HINGE_TEMPERATURE`); None
    before the audit, on a distance the hinge's curvature is not written for, or where no temperature met the
    retrain (the audit's scale then stands)."""
    if analysis.model.config.distance not in HINGE_DISTANCES:
        return None
    stored = _made_from_audit(model_dir, analysis, key=HINGE_TEMPERATURE, params_of=hinge_temperature_params,
                              make=hinge_temperature_audit)
    if stored is None:
        return None
    temperature = float(stored.iloc[0]["temperature"])
    return temperature if math.isfinite(temperature) else None


def _made_from_audit(model_dir: Path | str, analysis: ModelAnalysis, *, key: str, params_of, make
                     ) -> pd.DataFrame | None:
    """A record made from the stored removal audit without a retrain (its refit audit, the hinge's temperature): read
    back where it was made from this audit (``params_of(audit)``), else ``make(analysis, audit)`` and stored under
    ``key``; None before the audit ran."""
    audit = saved_prediction_audit(model_dir)
    if audit is None:
        return None
    params = params_of(audit)
    stored = load_result(model_dir, key, params=params)
    if stored is None:
        stored = make(analysis, audit)
        save_result(model_dir, key, stored, params=params)
    return stored


#: The hinge's temperature search (:func:`hinge_temperature`) in the removal audit's estimate, in retrains of the
#: model: measured 0.16 of one (FB13, 58 s) to 1.6 (FB15k-237 with one negative, 65 s, under load; one thread).
HINGE_SEARCH_RETRAINS = 1


#: The removal audit predicted again where its stored retrain stands (:func:`prediction_audit`'s ``outdated``), in
#: retrains of the model: the model loaded, its influence context and one step. Measured on FB15k-237 with L2 and
#: eight negatives: 13.6 s, where its retrain is estimated at 191 s (one thread, nothing else running; 2026-12-07).
AUDIT_AGAIN_RETRAINS = 0.1
#: The audit task's message where it predicts a stored audit's set again.
AUDIT_PREDICTED_AGAIN = "the stored audit's set predicted again with today's step (its retrain stands)"


def prediction_audit_seconds(model_dir: Path | str) -> float | None:
    """Estimated seconds of the removal audit: one retrain, and on squared L2 the hinge's temperature search
    after it (:data:`HINGE_SEARCH_RETRAINS`); where the stored audit's retrain stands (:func:`prediction_audit`'s
    ``outdated``), a prediction alone (:data:`AUDIT_AGAIN_RETRAINS`)."""
    if is_model_dir(model_dir) and outdated_prediction_audit(model_dir) is not None:
        return model_retrain_seconds(model_dir, retrains=AUDIT_AGAIN_RETRAINS)
    config = read_config(model_dir) if is_model_dir(model_dir) else {}
    search = HINGE_SEARCH_RETRAINS if config.get("distance", "squared_l2") in HINGE_DISTANCES else 0
    return model_retrain_seconds(model_dir, retrains=1 + search)


def temperature_search_seconds(model_dir: Path | str) -> float | None:
    """Estimated seconds of the hinge's temperature search alone (:func:`hinge_temperature_task`)."""
    return model_retrain_seconds(model_dir, retrains=HINGE_SEARCH_RETRAINS)


def add_audit_seconds(model_dir: Path | str) -> float | None:
    """Estimated seconds of the Add audit: one retrain."""
    return model_retrain_seconds(model_dir, retrains=1)
