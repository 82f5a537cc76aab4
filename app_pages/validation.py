"""Validation: influence scores against real retraining (Du §4.2) and measures against the census (§4.1)."""

import streamlit as st

from kgbias_app import cache, charts, jobs_ui, links, sidebar, texts, widgets
from kgbias_app.escape import md, md_format
from kgbias_app.sections import validation as section
from kgbias_core import tasks
from kgbias_core.data.census import CENSUS_MEASURES, PAIRING_RESOURCES, census_file, census_validation, census_years
from kgbias_core.data.datasets import resolve_data_dir
from kgbias_core.errors import CENSUS_NOT_PAIRED
from kgbias_core.influence.retraining_check import REMOVAL_KINDS, summarize_accuracy

model = sidebar.page_header("Validation")

st.header("Influence against retraining (Du §4.2)")
with widgets.errors_shown(stop=True):
    analysis = cache.analysis(model)
    measures = cache.measures(model)
    occupation, row, defined = widgets.occupation_section(measures, header=False)
    unretrainable = analysis.model.retrain_refusal()  # an import: the check retrains, so it is not offered
    if not defined:
        st.warning(texts.NEEDS_BOTH_GENDERS)
    elif unretrainable is not None:
        st.caption(texts.NO_RETRAIN_HERE.format(why=md(unretrainable)))
    else:
        ks = section.removal_ks(analysis, occupation=occupation, name=row["name"])
        kinds = links.multiselect("Removed sets", list(REMOVAL_KINDS), default=list(REMOVAL_KINDS), key="val_kinds",
                                  what="removal set")
        st.caption(texts.VALIDATION_RUNS.format(n_runs=len(ks) * len(kinds) + 1, epochs=analysis.model.config.epochs))
        check = tasks.influence_accuracy_task(model.path, occupation=occupation, ks=ks, kinds=kinds)
        if jobs_ui.is_running(check):
            st.caption(texts.CHECK_RUNNING)
        elif st.button("Run the check", type="primary", disabled=not ks or not kinds):
            jobs_ui.submit(f"{model.name}: influence check for {row['name']}", check, group="validation",
                           estimate=tasks.model_retrain_seconds(model.path, retrains=len(ks) * len(kinds) + 1))
            st.rerun()

with widgets.errors_shown():
    runs = tasks.saved_accuracy(model.path, occupation)
    if runs is not None:
        summary = summarize_accuracy(runs)
        columns = st.columns(5)
        columns[0].metric("Pearson r", f"{summary.r:.3f}")
        columns[1].metric("p-value", f"{summary.p_value:.2g}")
        columns[2].metric("Random-removal noise", f"{summary.noise:.4f}", help="max |actual change| of random sets")
        columns[3].metric("Scale actual/predicted", f"{summary.scale:.3g}")
        columns[4].metric("Sign agreement", f"{summary.sign_agreement:.0%}")
        widgets.show_chart(charts.accuracy_scatter(runs, scale=summary.scale), runs, caption=texts.ACCURACY_SCATTER,
                           file_name=widgets.readable_name(model.name, widgets.occupation_name(model, occupation),
                                                           "influence-check"),
                           key="accuracy", occupation=widgets.occupation_name(model, occupation))

st.header("Calibration of the predicted changes (METHODS §4)")
with widgets.errors_shown():
    section.calibration_section(model)

jobs_ui.progress_panel(jobs_ui.session_tasks("validation"), heading=texts.JOBS_OF_SESSION)

st.header("Census (Du §4.1)")
data_dir = resolve_data_dir()
census = census_file(data_dir)
if model.dataset not in PAIRING_RESOURCES:
    st.info(texts.NO_PAIRING.format(dataset=md(model.dataset)))
elif not census.is_file():
    st.info(texts.NO_CENSUS.format(path=census, data_dir=data_dir))
else:
    with widgets.errors_shown():
        year = links.selectbox("Census year", census_years(census), key="val_year", what="census year")
        correlations, joined = census_validation(measures, census_path=census, year=year, dataset=model.dataset)
        if joined.empty:
            st.warning(md_format(CENSUS_NOT_PAIRED, model=model.name, dataset=model.dataset))
        elif correlations["n"].max() < 3:
            st.warning(texts.CENSUS_TOO_FEW.format(n=int(correlations["n"].max()), year=year))
        else:
            section.census_table(correlations)
            st.caption(texts.census_table_caption(n_paired=len(joined), n_used=correlations["n"]))
            measure = links.selectbox("Measure", CENSUS_MEASURES, key="val_measure", format_func=texts.measure_name,
                                      what="measure")
            widgets.show_chart(charts.census_scatter(joined, measure=measure),
                               joined[["occupation", "name", "p_male", "log_prop", measure]],
                               caption=texts.CENSUS_SCATTER, key="census",
                               file_name=widgets.csv_name(model.name, "census", str(year)))
