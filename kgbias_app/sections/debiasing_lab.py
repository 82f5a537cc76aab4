"""The Debiasing lab's own UI: the edit, its prediction, a run's figures, the run picker. The page
(``app_pages/debiasing_lab.py``) calls these."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import streamlit as st

from kgbias_app import cache, charts, jobs_ui, links, texts
from kgbias_app.cache import ModelRef
from kgbias_app.escape import md, md_format
from kgbias_app.sections.refined_prediction import refined_prediction
from kgbias_app.sections.stand_in_audit import stand_in_audit
from kgbias_app.widgets import (
    basket,
    errors_shown,
    min_group_size,
    occupation_name,
    offered_prediction,
    readable_name,
    show_chart,
    too_few,
    unaudited_caption,
)
from kgbias_core import tasks
from kgbias_core.analysis import ModelAnalysis
from kgbias_core.errors import MeasureError
from kgbias_core.evaluation.link_prediction import before_after, load_link_prediction
from kgbias_core.jobs import Priority
from kgbias_core.readings import old_estimate_sentence, prediction_sentence, verdict_sentence
from kgbias_core.report import WhatIfRun
from kgbias_core.whatif.edits import MAX_DUMMIES, Edit, make_edit
from kgbias_core.whatif.runs import AFTER_GROUPS_CHOICE, collateral
from kgbias_core.whatif.step_ratio import ADDITIONS, observed_step_ratio

# Texts of this page alone (shared sentences stay in kgbias_app/texts.py).
STRATEGIES = {
    "if": "Remove k triples by influence (IF-REMOVE)",
    "random": "Remove k random triples (Random-REMOVE)",
    "basket": "Remove the removal basket",
    "add": "Add dummies of the under-represented gender (Add)",
}
NOT_PREDICTED = "No prediction for this model: {why}. Retrain to see the change."
#: The run view: what the edit's prediction was before the retrain, and the retrain read against it.
RUN_PREDICTED = "Predicted before retraining: change {point}. {sentence} {verdict}"
RUN_UNPREDICTED = "No prediction for this run: {why}"
ADD_EDIT = "Edit: {strategy}, {n} new triples."
IF_REMOVE_FEWER = "Only {n} training triples move B_gr of {name} towards 0: IF-REMOVE removes those {n}, not {k}."
RANDOM_CAPPED = "k = {k} exceeds the {n} training triples: Random-REMOVE removes all {n}."
EMPTY_BASKET = "The removal basket of {model} is empty: add triples on the Influential triples page."
PREDICTED_HELP = (
    "One Newton step of the objective without the {n} removed triples, with every term's curvature counted "
    "positive (|H|), and B_gr computed exactly at the moved embedding (issue 25; no calibration needed)."
)
ADD_HELP = (
    "The dummies start at their initial embedding, as the retrain starts them, and are trained by a replay of the "
    "retrain's own loop with every other row frozen; one Newton step of the objective with the added triples (|H|) "
    "then moves the trained rows, and B_gr is computed exactly over the edited groups, dummies counted (issue 25)."
)
#: Shown under an Add prediction while the model has no Add audit: what the estimator's retrains gave elsewhere.
ADD_UNAUDITED = (
    "No audit of this model retrains an addition yet (the Add audit below does, once). Against Add retrains "
    "(c = 0.5) this estimator had the sign right on 19 of 19 (15 on synthetic graphs, 4 on FB15k-237), but a "
    "retrain moved 0.58-0.73 of the prediction on the eight-negative default and 2.1-2.3 times it on the "
    "one-negative model: read its size with care (docs/results/whatif.md)."
)
AUDIT_SENTENCE = (
    "Audit of this model's prediction (one masked retrain): removing the top {k} of the {moving} triples that move "
    "B_gr of {name}, predicted {predicted} [{low}, {high}], retrained {retrained}: {verdict} the interval "
    "({estimator}). Removals above are predicted with {removals}; additions read the Add "
    "audit's ratio. Plans read their own scale, from verified plans: a plan's chosen triples move by a smaller part "
    "of their step."
)
#: The audit sentence's source where the audit gives no ratio (its prediction moved B_gr by less than 1e-6).
NO_RATIO = "the step as computed: no retrain has been compared with a prediction yet"
AUDIT_BUTTON = "Audit the prediction against one masked retrain"
#: Where the stored audit predicted with a step the lab no longer makes (L2 before 2026-12-07): no retrain.
AUDIT_AGAIN_BUTTON = "Predict the stored audit again with today's step (its retrain stands)"
AUDIT_AGAIN_HELP = (
    "The model's audit was predicted with an earlier step of this distance, so its ratio does not scale today's. "
    "Its set is predicted again and judged against the retrain already stored: no new retrain."
)
AUDIT_HELP = (
    "Predicts one edit (the top 16% of the triples that move the occupation with the most persons of its rarer "
    "gender) and retrains it masked: the model's own check of the estimator, stored with its results."
)
#: A stored removal curve whose predictions were made with another calibration than the model's now.
CURVE_STALE = ("The curve's predictions were made with an earlier calibration of this model ({estimator}); its "
               "retrains stand.")
CURVE_REPREDICT = "Predict the curve again with this model's calibration (no retrain)"
CURVE_STALE_HELP = ("Rebuilds each point's removal set, checks it by its closed-form sum, and predicts it as the lab "
                    "predicts now; the retrained B_gr is kept.")
CURVE_REPREDICTING = "Predicting the curve again (no retrain)…"
#: The audit caption's removals between the audit's retrain and the end of its temperature search.
PRIOR_UNTIL_SEARCHED = ("the hinge's curvature at the prior T = {temperature:.2f} margins until this audit's own "
                        "temperature is searched (no retrain)")
#: Shown under an Add prediction, and in the audit section, once the model has its Add audit.
ADD_AUDIT_SENTENCE = (
    "Audit of this model's Add prediction (one retrain): adding {dummies} dummies to {name}, predicted {predicted} "
    "[{low}, {high}], retrained {retrained}: {verdict} the interval ({estimator}). Additions are predicted with "
    "the change times {scale}, {source}."
)
#: Offered where the model's audit was stored before the hinge's temperature was searched on it (no retrain).
TEMPERATURE_BUTTON = "Set the hinge's temperature from this audit (no retrain)"
TEMPERATURE_HELP = (
    "Solves the audit's edit at a dozen or so temperatures of the hinge's curvature until its step meets the audit's "
    "retrain; removals are then predicted at that temperature, unscaled (where one is found).")
ADD_AUDIT_BUTTON = "Audit the Add prediction against one retrain"
ADD_AUDIT_HELP = (
    "Adds Du's dummies (c = 0.5) to the occupation the prediction audit uses, or to the largest one Add serves, and "
    "retrains the edited graph once. Its retrained/predicted ratio then multiplies this model's Add predictions: the "
    "ratio differs by model (0.58-0.73 on FB15k-237's eight-negative default, 2.1-2.3 on the one-negative model)."
)
CALIBRATION_OPTIONAL = (
    "Optional: fits the scale of the old estimator, Du's closed form (13 masked retrains). The predicted change "
    "above is the Newton step, which needs no calibration; a calibrated model shows the old figure beside it."
)
LINK_BEFORE_AFTER = ("Filtered link prediction on the test split (heads, tails and both pooled): all queries and "
                     "occupation queries only.")

# --- debiasing lab ------------------------------------------------------------------------------
#: The lab's defaults: k triples to remove, c dummies per missing person.
LAB_K, LAB_C = 20, 0.5


#: k values offered for the removal curve, and the default ones.
CURVE_KS, CURVE_DEFAULT = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000], [5, 20, 50]


@dataclass(frozen=True)
class EditChoice:
    """The edit the lab's controls describe (before it is built on a model)."""

    strategy: str  # a key of STRATEGIES
    k: int  # triples to remove (if, random)
    c: float  # dummies per missing person (add)
    cap: int  # at most this many dummies (add)


def edit_choice() -> EditChoice:
    # persist_state: coming back from another page finds the edit as it was left (Streamlit would reset it).
    strategy = links.radio("Edit", list(STRATEGIES), format_func=STRATEGIES.__getitem__, key="lab_strategy",
                           what="edit", persist_state="session")
    left, right = st.columns(2)
    k, c, cap = 0, LAB_C, MAX_DUMMIES
    if strategy == "add":
        c = links.number(left.slider, "c: dummies per missing person, c·(|M| − |F|)", 0.0, 2.0, LAB_C, step=0.1,
                         key="lab_c", what="c", kind=float, persist_state="session")
        cap = int(links.number(right.number_input, "At most this many dummies", 1, 1_000_000, MAX_DUMMIES,
                               key="lab_cap", what="cap", persist_state="session"))
    elif strategy != "basket":
        k = int(links.number(left.number_input, "k: triples to remove", 1, 10**9, LAB_K, key="lab_k", what="k",
                             persist_state="session"))
    return EditChoice(strategy=strategy, k=k, c=c, cap=cap)


def build_edit(analysis: ModelAnalysis, choice: EditChoice, *, occupation: str) -> Edit | None:
    """The chosen edit, with a warning where k was capped; None (and a hint) for an empty basket.

    An impossible edit raises :class:`~kgbias_core.errors.MeasureError` (shown by :func:`errors_shown`).
    """
    model_name, n = analysis.model.name, analysis.model.triples.shape[0]
    chosen = basket(model_name) if choice.strategy == "basket" else []
    if choice.strategy == "basket" and not chosen:
        st.info(EMPTY_BASKET.format(model=model_name))
        return None
    edit = make_edit(analysis, occupation, strategy=choice.strategy, k=min(choice.k, n), c=choice.c, cap=choice.cap,
                     indices=chosen)
    if choice.strategy == "if" and len(edit.removed) < choice.k:
        name = analysis.groups.names[analysis.groups.index(occupation)]
        st.warning(IF_REMOVE_FEWER.format(n=len(edit.removed), name=md(name), k=choice.k))
    if choice.strategy == "random" and choice.k > n:
        st.warning(RANDOM_CAPPED.format(k=choice.k, n=n))
    return edit


def predicted_edit(model: ModelRef, edit: Edit, *, row: pd.Series) -> None:
    """B_gr now, the edit's predicted change and B_gr after, with the estimator and its interval (issue 25):
    the Newton step for removals and for Add; the old closed form beside it, labelled, for removals."""
    membership = cache.edit_membership(model, edit.occupation, edit.kind, tuple(edit.removed),
                                       len(edit.added_entities))
    sentence = texts.membership_sentence(membership, name=md(row["name"]))
    if edit.kind == "add":
        st.caption(ADD_EDIT.format(strategy=md(edit.strategy), n=len(edit.added_triples)))
    (st.warning if membership.changes_groups else st.caption)(sentence)
    before = row["group_bias"]
    try:
        prediction = offered_prediction(model, edit, key="lab_predict")
    except MeasureError as exc:  # a prediction this model cannot have (an Add on an L1/L2 import): its line says why
        prediction = None
        st.info(NOT_PREDICTED.format(why=md(str(exc))))
    columns = st.columns(3)
    columns[0].metric("B_gr now", texts.fmt(before), help=texts.SIGN)
    if prediction is not None:
        columns[1].metric(texts.PREDICTED_CHANGE, texts.fmt(prediction.point),
                          help=(ADD_HELP if edit.kind == "add" else PREDICTED_HELP).format(n=len(edit.removed)))
        columns[2].metric("Predicted B_gr after", texts.fmt(before + prediction.point))
        st.caption(prediction_sentence(prediction, before=before))  # our words and numbers: no escape
        if edit.kind == "add":
            st.caption(add_audit_sentence(model) or ADD_UNAUDITED)
        else:
            unaudited_caption(model)
    if edit.kind == "remove":
        st.caption(old_estimate_sentence(cache.predicted_removal(model, edit.occupation, edit.removed)))
        if prediction is not None:
            refined_prediction(model, edit, before=before)


def add_audit_sentence(model: ModelRef) -> str | None:
    """The model's Add audit in words (:data:`ADD_AUDIT_SENTENCE`), or None before it ran."""
    audit = tasks.saved_add_audit(model.path)
    if audit is None:
        return None
    row = audit.iloc[0]
    # the ratio of the frame just read (one read per call); None only where its prediction moved nothing
    ratio = observed_step_ratio(None, use=ADDITIONS, add_audit=audit)
    return md_format(ADD_AUDIT_SENTENCE, dummies=int(row["dummies"]), name=str(row["name"]),
                     predicted=texts.fmt(row["predicted"]), low=texts.fmt(row["low"]), high=texts.fmt(row["high"]),
                     retrained=texts.fmt(row["retrained"]), verdict="inside" if row["inside"] else "outside",
                     estimator=str(row["estimator"]), scale=f"{1.0 if ratio is None else ratio.value:.2f}",
                     source=NO_RATIO if ratio is None else ratio.describe())


def temperature_offer(model: ModelRef, background: list) -> None:
    """The hinge's temperature searched on an audit stored before the search existed (no retrain): offered with its
    estimate, or listed in ``background`` while it runs; nothing once searched."""
    if tasks.temperature_searched(model.path):
        return
    jobs_ui.offer_job(tasks.hinge_temperature_task(model.path), background, label=TEMPERATURE_BUTTON,
                      help=TEMPERATURE_HELP, seconds=tasks.temperature_search_seconds(model.path),
                      job=texts.TEMPERATURE_JOB.format(name=model.name))


def noise_and_audits(model: ModelRef, analysis: ModelAnalysis, *, noise: pd.DataFrame | None, name: str,
                     spread: float | None, unretrainable: str | None) -> None:
    """The noise band (started by default, once per model: every comparison below is read against it), the
    occupation ``name``'s ``spread`` in it, and the audits and calibration (:func:`audit_and_calibration`), with the
    panel of their jobs; on a model no retrain can run on here (``unretrainable``: why), one line instead, and no
    job started."""
    if unretrainable is not None:
        st.caption(texts.NO_RETRAINS_BELOW)
        background: list = []
        stand_in_audit(model, analysis, background)
        jobs_ui.progress_panel(background, key="background")
        return
    background: list = []
    with errors_shown():
        jobs_ui.stored_per_model([model], title=texts.NOISE_BAND_JOB, load=lambda m: noise,
                                 task=lambda m: tasks.noise_band_task(m.path), pending=background,
                                 priority=Priority.BACKGROUND,
                                 estimate=lambda m: tasks.model_retrain_seconds(m.path,
                                                                                retrains=len(tasks.NOISE_SEEDS)))
    if noise is not None:
        st.caption(texts.NOISE_BAND.format(name=md(name), seeds=", ".join(map(str, tasks.NOISE_SEEDS)),
                                           spread=texts.fmt(spread)))
    else:
        st.info(texts.NOISE_BAND_PENDING)
    audit_and_calibration(model, analysis, background)
    jobs_ui.progress_panel(background, key="background")


def audit_and_calibration(model: ModelRef, analysis: ModelAnalysis, background: list) -> None:
    """The model's one-retrain audits of the prediction, of a removal and of an addition (each shown once stored,
    else offered with its estimate), and the old closed form's 13-retrain calibration, offered only: the
    prediction above needs none of them (issue 25). Jobs queued or running in any session go to ``background``
    (the panel below), never offered twice."""
    audit = tasks.saved_prediction_audit(model.path)
    task = tasks.prediction_audit_task(model.path)
    if audit is not None:
        row = audit.iloc[0]
        ratio = cache.step_ratio(model)  # None only where the audit's prediction moved nothing (no ratio in it)
        _, temperature, prior = cache.edit_calibration(model)
        if prior:  # audited, its own temperature not searched yet (model_edit_calibration)
            removals = PRIOR_UNTIL_SEARCHED.format(temperature=temperature)
        elif ratio is not None and ratio.temperature is not None:
            removals = ratio.describe()
        else:
            removals = (f"the step times {1.0 if ratio is None else ratio.value:.2f}, "
                        f"{NO_RATIO if ratio is None else ratio.describe()}")
        st.caption(md_format(
            AUDIT_SENTENCE, k=int(row["k"]), moving=int(row["moving"]), name=str(row["name"]),
            predicted=texts.fmt(row["predicted"]), low=texts.fmt(row["low"]), high=texts.fmt(row["high"]),
            retrained=texts.fmt(row["retrained"]), verdict="inside" if row["inside"] else "outside",
            estimator=str(row["estimator"]), removals=removals))
        temperature_offer(model, background)
    else:
        again = tasks.outdated_prediction_audit(model.path) is not None
        jobs_ui.offer_job(task, background, label=AUDIT_AGAIN_BUTTON if again else AUDIT_BUTTON,
                          help=AUDIT_AGAIN_HELP if again else AUDIT_HELP,
                          seconds=tasks.prediction_audit_seconds(model.path),
                          job=texts.AUDIT_JOB.format(name=model.name))
    if (sentence := add_audit_sentence(model)) is not None:
        st.caption(sentence)
    else:
        jobs_ui.offer_job(tasks.add_audit_task(model.path), background, label=ADD_AUDIT_BUTTON, help=ADD_AUDIT_HELP,
                          seconds=tasks.add_audit_seconds(model.path), job=texts.ADD_AUDIT_JOB.format(name=model.name))
    if analysis.model.calibration is not None:
        return
    calibration = tasks.calibration_task(model.path)
    seconds = tasks.calibration_seconds(model.path)
    if jobs_ui.is_running(calibration):
        background.append(calibration)
    elif st.button(texts.with_estimate(texts.CALIBRATE_BUTTON, seconds), help=CALIBRATION_OPTIONAL):
        jobs_ui.submit(f"{model.name}: calibration", calibration, group="lab", priority=Priority.BACKGROUND,
                       estimate=seconds)
        st.rerun()


def run_figures(target: pd.Series, *, spread: float | None, baseline: tuple[int, float] | None) -> None:
    """The edited occupation's B_gr before and after a what-if (a row of ``bias_change``), read against
    the noise band's ``spread`` and the Random-REMOVE ``baseline`` (``random_baseline``)."""
    columns = st.columns(4)
    columns[0].metric(f"B_gr of {target['name']} before", texts.fmt(target["group_bias_before"]), help=texts.SIGN)
    columns[1].metric("after", texts.fmt(target["group_bias_after"]), help=AFTER_GROUPS_CHOICE)
    columns[2].metric("change", texts.fmt(target["change"]))
    columns[3].metric("after, original persons", texts.fmt(target["group_bias_after_original"]),
                      delta=texts.fmt(target["change_original"]), delta_color="off", help=AFTER_GROUPS_CHOICE)
    st.caption(AFTER_GROUPS_CHOICE)
    st.caption(texts.noise_sentence(target["change"], spread))
    if baseline is not None:
        st.caption(texts.random_baseline_sentence(*baseline))


def run_prediction(run: WhatIfRun) -> None:
    """What was predicted for the run's edit before it was retrained (its estimator and interval, as the report
    says), and whether the retrained change fell inside, over the persons the prediction holds."""
    predicted = run.predicted
    if predicted is None:
        st.caption(RUN_UNPREDICTED.format(why=md(run.unpredicted)))
        return
    st.caption(md_format(RUN_PREDICTED, point=texts.fmt(predicted.point), sentence=prediction_sentence(predicted),
                         verdict=verdict_sentence(predicted, run.judged, kind=run.kind)))


def link_prediction_before_after(base: ModelRef, run: ModelRef) -> None:
    """MRR and Hits@10 of a base model and its what-if, or a button computing them as a lab job."""
    base_links, run_links = load_link_prediction(base.path), load_link_prediction(run.path)
    links = tasks.link_prediction_task([run.path, base.path])
    if base_links is not None and run_links is not None:
        st.dataframe(before_after(base_links, run_links), hide_index=True)
        st.caption(LINK_BEFORE_AFTER)
    elif not jobs_ui.is_running(links) and st.button("Compute link prediction"):
        jobs_ui.submit(f"{run.name}: link prediction", links, group="lab")
        st.rerun()


def run_picker(runs: list[ModelRef]) -> ModelRef:
    """One of a model's what-if runs; the one retrained last in this session, else the last one."""
    names = [run.name for run in runs]
    last = st.session_state.get("lab_last_run")
    name = links.selectbox("Run", names, index=names.index(last) if last in names else len(names) - 1, key="run",
                           what="what-if run")
    return runs[names.index(name)]


def removal_curve(model: ModelRef, occupation: str, row: pd.Series, *, spread: float | None,
                  run_point: tuple[int, float] | None, retrainable: bool = True) -> None:
    """Du Fig 4d-f: the k values, the button that retrains the curve as a job, and the curve once stored
    (``run_point``: the selected run, when it removed triples of this occupation). ``retrainable``: False for a
    model no retrain can run on here (an import), which is told so, not offered the button."""
    if not retrainable:
        st.caption(texts.NO_CURVE_HERE)
        return
    ks = links.multiselect("k values", CURVE_KS, default=CURVE_DEFAULT, key="lab_curve_ks", what="k")
    removal = tasks.removal_curve_task(model.path, occupation=occupation, ks=sorted(ks))
    if not jobs_ui.is_running(removal) and st.button(f"Compute the curve ({2 * len(ks)} retrains from scratch)",
                                                      disabled=not ks):
        jobs_ui.submit(f"{model.name}: curve for {row['name']}", removal, group="lab",
                       estimate=tasks.model_retrain_seconds(model.path, retrains=2 * len(ks)))
        st.rerun()
    curve = tasks.saved_curve(model.path, occupation)
    if curve is not None:
        show_chart(charts.removal_curve(curve, spread=spread, run=run_point), curve,
                   caption=texts.REMOVAL_CURVE, file_name=readable_name(model.name, row["name"], "curve"),
                   key="removal_curve", occupation=row["name"])
        if not tasks.curve_is_current(model.path, occupation, curve):  # the frame just read, not read again
            st.caption(md_format(CURVE_STALE, estimator=str(curve.loc[curve["k"] > 0, "estimator"].iloc[0])))
            waiting: list = []
            jobs_ui.offer_job(tasks.repredict_curves_task(model.path), waiting, label=CURVE_REPREDICT,
                              help=CURVE_STALE_HELP, seconds=tasks.repredict_seconds(model.path, occupation),
                      job=f"{model.name}: removal curves predicted again")
            if waiting:
                st.caption(CURVE_REPREDICTING)


def collateral_chart(model: ModelRef, run: ModelRef, frame: pd.DataFrame, *, occupation: str,
                     noise: pd.DataFrame | None) -> None:
    """Every occupation's change of B_gr after ``run`` (its target ``occupation`` highlighted), beyond the noise
    band coloured as an effect; occupations below the minimum size listed apart, as on the Overview."""
    minimum = min_group_size(key="lab_min_group_size")
    drawn, small = collateral(frame, occupation=occupation, minimum=minimum)
    show_chart(charts.bias_change_bars(drawn, occupation=occupation, noise=noise), frame,
               caption=(texts.BIAS_CHANGE if noise is not None else texts.BIAS_CHANGE_PENDING)
               + texts.COLLATERAL_SMALL.format(minimum=minimum, n=len(small)),
               file_name=readable_name(run.name, "bias-change"), occupation=occupation_name(model, occupation),
               key="bias_change")
    too_few(small, ["name", "n_male", "n_female", "n_male_after", "n_female_after", "change"],
            ids=["occupation"], rule=texts.TOO_FEW_OCCUPATIONS.format(minimum=minimum))
