"""Findings: Du et al.'s headline claims next to what the cached models show, each with its uncertainty."""

import streamlit as st

from kgbias_app import cache, jobs_ui, sidebar, texts, widgets
from kgbias_app.escape import md, md_format
from kgbias_core import tasks
from kgbias_core.data.census import census_file
from kgbias_core.data.datasets import resolve_data_dir
from kgbias_core.findings import side_by_side

model = sidebar.page_header("Findings")
st.caption(texts.FINDINGS_INTRO)
census = census_file(resolve_data_dir())

with widgets.errors_shown():
    tables = cache.findings_by_model(model, census=census)
    compute = tasks.findings_task(model.path, census=census)
    if model.name not in tables:
        st.info(texts.FINDINGS_MISSING.format(model=md(model.name)))
        if jobs_ui.is_running(compute):
            st.caption(texts.CHECK_RUNNING)
        elif st.button("Compute the findings", type="primary"):
            jobs_ui.submit(f"{model.name}: findings", compute, group="findings")
            st.rerun()
    mine = tables.get(model.name)
    if mine is not None and "seed_min" in mine.columns:  # a member of a seed family (issue 24)
        st.info(md_format(texts.FINDINGS_FAMILY, model=model.name, n=int(mine["n_seeds"].max()),
                          family=str(cache.config(model)["family"]["name"])))
    if tables:
        table = side_by_side(tables)
        # A static table: it wraps each cell, so the verdict at the end of a long finding is read whole (the
        # scrolling grid cut it off at the column's width).
        st.table(table.rename(columns=texts.FINDING_COLUMNS).set_index(texts.FINDING_COLUMNS.get("claim", "claim")))
        widgets.download(table, widgets.csv_name(model.name, "findings"), key="findings:csv")

st.subheader("Claims 4 and 5: retrains")
with widgets.errors_shown():
    measures = cache.measures(model)
    occupation = widgets.occupation_picker(measures)
    st.caption(texts.FINDINGS_RETRAINS.format(model=md(model.name), epochs=cache.analysis(model).model.config.epochs))
    retrain = tasks.findings_task(model.path, census=census, retrain=[occupation])
    if jobs_ui.is_running(retrain):
        st.caption(texts.CHECK_RUNNING)
    elif st.button("Run the retrains and update the findings"):
        jobs_ui.submit(f"{model.name}: findings with retrains", retrain, group="findings")
        st.rerun()

jobs_ui.progress_panel(jobs_ui.session_tasks("findings"), heading=texts.JOBS_OF_SESSION)
