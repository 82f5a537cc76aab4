"""Debiasing lab (Du §4.3): edit one occupation's training triples, predict, retrain, compare with the base."""

import streamlit as st

from kgbias_app import cache, jobs_ui, sidebar, texts, widgets
from kgbias_app.escape import md, md_format
from kgbias_app.sections import debias_compare, debias_embedding
from kgbias_app.sections import debiasing_lab as section
from kgbias_app.sections import plan as plan_section
from kgbias_app.sections import refined_prediction as refined_section
from kgbias_core import tasks
from kgbias_core.whatif.runs import noise_spread, random_baseline

model = sidebar.page_header("Debiasing lab")
run_point = None  # the selected run on the curve, when it removed triples of this occupation

with widgets.errors_shown(stop=True):
    analysis = cache.analysis(model)
    occupation, row, _ = widgets.occupation_section(cache.measures(model), key="lab_occupation")
    noise = tasks.saved_noise_band(model.path)
    unretrainable = analysis.model.retrain_refusal()  # an import: every retrain below would fail, so none is offered

st.subheader("Edit and predicted change")
choice = section.edit_choice()
with widgets.errors_shown():
    edit = section.build_edit(analysis, choice, occupation=occupation)
    if edit is not None:
        section.predicted_edit(model, edit, row=row)
        name = tasks.whatif_name(model.name, edit, occupation_name=row["name"])
        whatif = tasks.whatif_task(base=model.path, edit=edit, out=model.beside(name), evaluate=True, overwrite=True)
        if unretrainable is not None:
            st.caption(texts.NO_RETRAIN_HERE.format(why=md(unretrainable)))
        elif name in cache.catalog():
            st.info(texts.RUN_IN_STORE.format(name=md(name)))
        elif jobs_ui.is_running(whatif):
            st.caption(texts.RUN_RETRAINING.format(name=md(name)))
        elif st.button(texts.RETRAIN_BUTTON, type="primary", help=texts.RETRAIN_HELP):
            jobs_ui.submit(texts.WHATIF_JOB.format(name=name, strategy=edit.strategy), whatif, group="lab",
                           estimate=tasks.model_retrain_seconds(model.path))
            st.session_state["lab_last_run"] = name

jobs_ui.progress_panel(jobs_ui.session_tasks("lab"), heading=texts.JOBS_OF_SESSION)

st.subheader("Noise band, audit and calibration")
spread = noise_spread(noise, occupation)
section.noise_and_audits(model, analysis, noise=noise, name=row["name"], spread=spread, unretrainable=unretrainable)

st.subheader("Runs of this model")
with widgets.errors_shown():
    runs, stale = cache.whatif_runs(model)
    if stale:
        st.warning(md_format(texts.STALE_RUNS, n=len(stale), model=model.name, names=", ".join(stale)))
    if not runs and unretrainable is not None:
        st.caption(texts.NO_RUNS_HERE)
    elif not runs:
        st.info(texts.NO_RUNS)
    else:
        run = section.run_picker(runs)
        edited = cache.config(run)["edit"]
        st.caption(md_format(texts.RUN_EDIT, **edited))
        if edited.get("mode") == "warm":
            st.warning(texts.WARM_RUN)
        frame = cache.bias_change(model, run)
        target = frame.set_index("occupation").loc[edited["occupation"]]
        membership = cache.edit_membership(model, edited["occupation"], edited["kind"],
                                           tuple(edited.get("removed") or ()), int(edited.get("n_added_entities", 0)))
        (st.warning if membership.changes_groups else st.caption)(
            texts.membership_sentence(membership, name=md(target["name"])))
        section.run_figures(target, spread=noise_spread(noise, edited["occupation"]),
                            baseline=random_baseline(tasks.saved_curve(model.path, edited["occupation"]),
                                                     k=edited["n_removed"]))
        whatif = cache.whatif_run(model, run)
        section.run_prediction(whatif)
        refined_section.run_refined(model, run, whatif)
        widgets.report_download(model, edited["occupation"], run=run)
        if edited["occupation"] == occupation and edited["kind"] == "remove":
            run_point = (edited["n_removed"], float(target["group_bias_after"]))
        section.collateral_chart(model, run, frame, occupation=edited["occupation"], noise=noise)
        section.link_prediction_before_after(model, run)

st.subheader("B_gr against k (Du Fig 4d-f)")
with widgets.errors_shown():
    section.removal_curve(model, occupation, row, spread=spread, run_point=run_point,
                          retrainable=unretrainable is None)

with widgets.errors_shown():
    plan_section.show(model, analysis, occupation=occupation, noise=noise)
debias_embedding.debias_the_embedding(model)
debias_compare.compare(model, occupation)
