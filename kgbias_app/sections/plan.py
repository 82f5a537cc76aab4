"""The Debiasing lab's "Plan" section (issue 29): plan the smallest removal (or the fewest dummies of Du's Add)
that brings B_gr of target occupations into an interval with bounded side effects, show it in words, verify it by
retraining, and keep predicted against actual per model.
The page (``app_pages/debiasing_lab.py``) calls :func:`show`."""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from kgbias_app import cache, charts, jobs_ui, texts
from kgbias_app.cache import ModelRef
from kgbias_app.escape import md
from kgbias_app.widgets import download, min_group_size, readable_name, show_chart, too_few
from kgbias_core.analysis import ModelAnalysis
from kgbias_core.tasks import model_retrain_seconds
from kgbias_core.tasks.plan import plan_edit, plan_run_dir, retrained_before, verify_plan_task
from kgbias_core.whatif.plan import (
    BAND_UNITS,
    LINK_PROXY,
    Plan,
    PlanConfig,
    plan_headline,
    plan_removal,
    plan_triples,
    resolve_targets,
)
from kgbias_core.whatif.plan_addition import plan_addition
from kgbias_core.whatif.runs import collateral
from kgbias_core.whatif.step_ratio import ADDITIONS, PLANS, model_step_ratio, saved_verifications

# Texts of this section alone.
HEADING = "Plan an edit (predicted, then verified)"
INTRO = (
    "The planner chooses the fewest training triples whose removal is predicted to bring B_gr of the targets into "
    "their interval (default: the family's seed band moved to hold 0, else 0 ± the noise band, else ± the "
    "tolerance × |B_gr|) while every other occupation's "
    "predicted change stays inside its band and the link-prediction proxy under its bound. The closed-form "
    "influence chooses and orders the triples; the Newton-step estimator sets how many. Profession and gender "
    "facts are never removed, so the groups measured stay the same. Or it plans Du's Add: the fewest dummy persons "
    "of the rarer gender, with the same target and bands."
)
KIND_LABEL = "Edit"
KIND_REMOVE = "Remove training triples"
KIND_ADD = "Add dummies (Du's Add)"
KIND_HELP = (
    "Remove: the planner picks triples by their influence. Add: it searches the number of dummy persons of the "
    "rarer gender that join the target (c·| |M| − |F| |, up to the c below); each prediction replays the dummies' "
    "training (about 5 s on FB15k-237), so an Add plan takes about half a minute. On FB15k-237's default an Add "
    "mostly raises B_gr (docs/results/whatif.md): the plan then says no number of dummies reaches the target."
)
ADD_ONE_TARGET = "An Add plans one occupation at a time (its dummies join one): choose one target."
C_MAX_LABEL = "At most c ="
C_MAX_HELP = "The largest Add tried: c·| |M| − |F| | dummies (1: as many as make the two groups equal)."
ADD_SCALE_LABEL = "Scale the Add prediction by {value:.2f}, what this model's own Add retrains showed"
NO_ADD_SCALE = ("The Add prediction is used as computed: no Add of this model has been retrained yet (the Add audit "
                "or a verified Add plan gives the ratio).")
ADD_SCALE_HELP = (
    "The ratio is {source}. A retrain of an Add moves B_gr by a part of the predicted change that differs by model "
    "(0.58-0.73 on the eight-negative FB15k-237 default, about 2 on the one-negative model): the removal plans' ratio "
    "does not apply to it."
)
ADD_CAPTION = "Target [{low}, {high}]: {source}. {chosen} dummies, of at most {candidates}."
BUILD_BUTTON = "Build the plan"
VERIFY_BUTTON = "Verify by retraining"
VERIFY_HELP = "A masked retrain from the model's seed without the plan's triples, saved as a run of this model."
VERIFY_NOT_HERE = "No verification by retraining: this model cannot be retrained here (the lab's edit above says why)."
FEASIBLE = "The plan meets its bounds: {what}."
INFEASIBLE = "No plan found within the bounds; shown is the closest plan: {what}."
TARGET_CAPTION = "Target [{low}, {high}]: {source}. {chosen} of {candidates} candidate triples."
COLLATERAL_CAPTION = (
    "Predicted change of B_gr of every occupation under the plan (the first target in orange); error bars: half "
    "each occupation's band ({bands}). Purple: predicted beyond the band. The other occupations take the Newton "
    "step as computed, not times the targets' scale: verified plans moved them that far or further. Against the "
    "noise band their retrains put about three times as many beyond it as predicted; against the seed band, none "
    "(docs/results/plans.md).{small}"
)
LINK_CAPTION = "{proxy}: {share} (bound {bound})."
VERIFIED_CAPTION = (
    "Predicted against actual B_gr after each verified plan of this model (one point per target); horizontal bars: "
    "the prediction's interval; grey: the target interval; orange: the actual landed in the target. A target that "
    "missed is planned again with the ratio its own retrain showed: build its plan again."
)
NO_VERIFIED = "No plan of this model verified yet: build one and press “Verify by retraining”."
CHANGED = ("The targets, the bounds, what counts as noise or the step scale changed since the plan was built: build "
           "it again.")
BAND_LABEL = "What counts as noise"
BAND_SEED = "The family's seed band"
BAND_NOISE = "The noise band"
BAND_HELP = (
    "Sets the default target and the other occupations' bands. The seed band is B_gr's spread over the family's "
    "seeds, each with its own initialisation, batch order and negatives: the target is that band moved to hold 0 "
    "(the pages would then state no lean), and an other occupation may move by its seed range. The noise band "
    "retrains this model under other seeds with its negatives kept; it is far narrower (on the FB15k-237 default a "
    "twentieth of the seed band): target 0 ± its spread."
)
SCALE_LABEL = "Scale the Newton step by {value:.2f}, what this model's own retrains showed"
SCALE_HELP = (
    "The scale is {source}. A retrain of finite epochs moves only part of the way the Newton step predicts, much "
    "the same part for the plans of one model (on the eight-negative FB15k-237 default 0.32-0.62, on the "
    "one-negative model about a quarter), so an unscaled plan falls short of its target. Plans read verified plans, "
    "not the audit: a plan's chosen triples move by a smaller part of their step than the audit's top share."
)
NO_SCALE = ("The Newton step is used as computed: no retrain of this model has been compared with a prediction yet. "
            "Verify a plan (or let the prediction audit run) and later plans use the ratio it shows.")
VERIFY_JOB = "{model}: verify the plan ({what})"
VERIFY_AGAIN = ("This edit of this model was retrained before ({name}): verifying reads that run back (the retrain is "
                "deterministic under the model's seed) and replaces its row in the record.")
#: The estimate of a verification that reads its run back: a comparison and, where missing, link prediction.
READ_BACK_SECONDS = 10.0
#: Session state: the plan last built on this page, with the settings it was built for.
PLAN_KEY = "lab_plan"


def target_key(occupation: str) -> str:
    """Widget key of the plan's target occupations while ``occupation`` is the lab's."""
    return f"plan_targets:{occupation}"


def _band_choice(band: pd.DataFrame | None) -> pd.DataFrame | None:
    """The radio between the seed band and the noise band, where the model has a family: the band chosen."""
    if band is None:
        return None
    chosen = st.radio(BAND_LABEL, [BAND_SEED, BAND_NOISE], horizontal=True, key="plan_band", help=BAND_HELP)
    return band if chosen == BAND_SEED else None


def _settings(analysis: ModelAnalysis, occupation: str, model_dir: str, *,
              add: bool) -> tuple[list[str], PlanConfig, float]:
    groups = analysis.groups
    bias = analysis.group_bias().cpu()
    options = [label for i, label in enumerate(groups.labels) if math.isfinite(float(bias[i]))]
    names = dict(zip(groups.labels, groups.names, strict=True))
    # One widget per lab occupation, its default that occupation: a new occupation starts from itself. Not seeded
    # through session_state: the browser then holds [] as the widget's default and, remounting it, sends [] back
    # (the plan would read as built for other targets and "Verify" be lost).
    targets = st.multiselect("Target occupations", options, default=[occupation] if occupation in options else [],
                             format_func=lambda label: names[label], key=target_key(occupation))
    left, middle, right = st.columns(3)
    c_max = float(left.number_input(C_MAX_LABEL, 0.01, 10.0, 1.0, step=0.1, key="plan_c_max", help=C_MAX_HELP)) \
        if add else 1.0
    max_triples, link = PlanConfig.max_triples, PlanConfig.max_link_share  # an Add removes nothing
    if not add:
        max_triples = int(left.number_input("At most this many triples", 1, 1_000_000, PlanConfig.max_triples,
                                            key="plan_max_triples"))
        link = float(middle.number_input("Bound on the link-prediction proxy", 0.0001, 1.0,
                                         PlanConfig.max_link_share, step=0.001, format="%.4f", key="plan_link",
                                         help=LINK_PROXY))
    tolerance = float(right.number_input("Tolerance without a noise band (× |B_gr|)", 0.01, 10.0,
                                         PlanConfig.tolerance, step=0.05, key="plan_tolerance"))
    # one target with a verified plan of its own reads its own ratio (step_ratio's module docstring)
    ratio = model_step_ratio(model_dir, use=ADDITIONS) if add else model_step_ratio(
        model_dir, use=PLANS, occupation=targets[0] if len(targets) == 1 else None)
    scale = 1.0
    if ratio is None:
        st.caption(NO_ADD_SCALE if add else NO_SCALE)
    elif st.checkbox((ADD_SCALE_LABEL if add else SCALE_LABEL).format(value=ratio.value), value=True,
                     key="plan_add_scale" if add else "plan_step_scale",
                     help=(ADD_SCALE_HELP if add else SCALE_HELP).format(source=ratio.describe())):
        scale = ratio.value
    config = PlanConfig(max_triples=max_triples, max_link_share=link, tolerance=tolerance, step_scale=scale)
    return targets, config, c_max


def show(model: ModelRef, analysis: ModelAnalysis, *, occupation: str, noise: pd.DataFrame | None) -> None:
    """The Plan section: settings, "Build the plan", the plan, "Verify by retraining", predicted against actual."""
    st.subheader(HEADING)
    st.caption(INTRO)
    add = st.radio(KIND_LABEL, [KIND_REMOVE, KIND_ADD], horizontal=True, key="plan_kind", help=KIND_HELP) == KIND_ADD
    targets, config, c_max = _settings(analysis, occupation, model.path, add=add)
    seed_band = _band_choice(cache.family_bias_band(model))
    settings = (model.name, model.version, tuple(targets), config, noise is not None, seed_band is not None, add,
                c_max)
    if add and len(targets) > 1:
        st.caption(ADD_ONE_TARGET)
    if st.button(BUILD_BUTTON, type="primary", disabled=not targets or (add and len(targets) > 1)):
        with st.spinner("Planning…" if not add else "Planning an Add: each prediction replays the dummies' training…"):
            resolved = resolve_targets(analysis, targets, noise=noise, seed_band=seed_band, config=config)
            plan = (plan_addition(analysis, resolved[0], noise=noise, seed_band=seed_band, config=config, c_max=c_max)
                    if add else plan_removal(analysis, resolved, noise=noise, seed_band=seed_band, config=config))
            st.session_state[PLAN_KEY] = (settings, plan)
    built = st.session_state.get(PLAN_KEY)
    if built is not None and built[0] == settings:
        _plan(model, analysis, built[1], noise=noise)
    elif built is not None and built[0][:2] == settings[:2]:
        st.caption(CHANGED)
    _verified(model)


def _plan(model: ModelRef, analysis: ModelAnalysis, plan: Plan, *, noise: pd.DataFrame | None) -> None:
    (st.success if plan.feasible else st.warning)(
        (FEASIBLE if plan.feasible else INFEASIBLE).format(what=plan_headline(plan)))
    for problem in plan.problems:
        st.caption(md(problem))
    for outcome in plan.targets:
        columns = st.columns(3)
        columns[0].metric(f"B_gr of {outcome.name} now", texts.fmt(outcome.before), help=texts.SIGN)
        columns[1].metric(f"Predicted B_gr of {outcome.name} after", texts.fmt(outcome.after),
                          delta=texts.fmt(outcome.prediction.point), delta_color="off")
        columns[2].metric("Predicted interval", f"{texts.fmt(outcome.after_low)} to {texts.fmt(outcome.after_high)}",
                          help=md(outcome.prediction.estimator))
        caption = ADD_CAPTION if plan.kind == "add" else TARGET_CAPTION
        st.caption(caption.format(low=texts.fmt(outcome.target.low), high=texts.fmt(outcome.target.high),
                                  source=md(outcome.target.source), chosen=outcome.n_chosen,
                                  candidates=outcome.n_candidates))
    if plan.kind != "add":  # an Add removes nothing: the proxy is 0
        st.caption(LINK_CAPTION.format(proxy=LINK_PROXY, share=f"{plan.link_share:.4f}",
                                       bound=f"{plan.config.max_link_share:g}"))
    if plan.band_units > 1:
        st.caption(BAND_UNITS.format(units=plan.band_units))
    triples = plan_triples(analysis, plan)
    st.dataframe(triples, hide_index=True, key="plan_triples_table")
    first = plan.targets[0]
    download(triples, readable_name(model.name, first.name, "plan"), key="plan_triples_csv",
             label="Download the plan's triples (CSV)")
    minimum = min_group_size(key="plan_min_group_size")
    drawn, small = collateral(plan.collateral, occupation=first.target.occupation, minimum=minimum)
    bands = plan.collateral[["occupation", "band"]].rename(columns={"band": "spread"})
    small_note = texts.COLLATERAL_SMALL.format(minimum=minimum, n=len(small))
    show_chart(charts.bias_change_bars(drawn, occupation=first.target.occupation, noise=bands),
               plan.collateral, caption=COLLATERAL_CAPTION.format(bands=md(plan.bands), small=small_note),
               file_name=readable_name(model.name, first.name, "plan-collateral"), key="plan_collateral",
               occupation=first.name)
    too_few(small, ["name", "n_male", "n_female", "change"], ids=["occupation"],
            rule=texts.TOO_FEW_OCCUPATIONS.format(minimum=minimum))
    if plan.removed or plan.added is not None:
        _verify_button(model, plan)


def _verify_button(model: ModelRef, plan: Plan) -> None:
    if cache.analysis(model).model.retrain_refusal() is not None:  # an import: verifying retrains (the lab says why)
        st.caption(VERIFY_NOT_HERE)
        return
    task = verify_plan_task(base=model.path, plan=plan, device=cache.device())
    run = plan_run_dir(model.path, plan)
    if jobs_ui.is_running(task):
        st.caption(texts.RUN_RETRAINING.format(name=md(run.name)))
    else:
        # an edit of this model retrained before is read back, not retrained (verify_plan_task): seconds, not minutes
        again = retrained_before(run, model.path, plan_edit(plan))
        if again:
            st.caption(VERIFY_AGAIN.format(name=md(run.name)))
        if st.button(VERIFY_BUTTON, help=VERIFY_HELP):
            jobs_ui.submit(VERIFY_JOB.format(model=model.name, what=plan_headline(plan)), task, group="plan",
                           estimate=READ_BACK_SECONDS if again else model_retrain_seconds(model.path))
    jobs_ui.progress_panel(jobs_ui.session_tasks("plan"), key="plan_jobs")


def _verified(model: ModelRef) -> None:
    record = saved_verifications(model.path)
    if record is None or record.empty:
        st.caption(NO_VERIFIED)
        return
    show_chart(charts.plan_verification_scatter(record), record, caption=VERIFIED_CAPTION,
               file_name=readable_name(model.name, "plans-verified"), key="plan_verified")
