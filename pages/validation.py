"""Validation: influence scores against real retraining (Du §4.2) and measures against the census (§4.1)."""

import streamlit as st

from kgbias_app import cache, lab_ui, sidebar, ui
from kgbias_core import tasks
from kgbias_core.data.census import CENSUS_MEASURES, census_file, census_validation, census_years
from kgbias_core.data.datasets import resolve_data_dir
from kgbias_core.errors import CENSUS_NOT_PAIRED
from kgbias_core.influence.retraining_check import summarize_accuracy

st.title("Validation")
model = sidebar.render()
if model is None:
    st.stop()

st.header("Influence against retraining (Du §4.2)")
with ui.errors_shown():
    analysis = cache.analysis(model.path, model.version)
    measures = cache.measures(model.path, model.version)
    occupation, row, defined = ui.occupation_section(measures, header=False)
    if not defined:
        st.warning("Influence on B_gr needs at least one man and one woman: pick another occupation.")
    else:
        n_moving = int((analysis.influence(occupation) != 0).sum())
        default = ", ".join(str(max(1, n_moving * share // 100)) for share in (2, 8, 32))
        text = st.text_input("k values (comma-separated)", default, key=f"val_ks:{occupation}",
                             help=f"{n_moving:,} training triples have a non-zero influence on {row['name']}.")
        ks = sorted({int(v) for v in text.replace(",", " ").split() if v.isdigit() and int(v) > 0})
        kinds = st.multiselect("Removed sets", ["top", "bottom", "random"], default=["top", "bottom", "random"],
                               key="val_kinds")
        n_runs = len(ks) * len(kinds) + 1
        st.caption(f"{n_runs} masked retrains from the model's seed ({analysis.model.config.epochs} epochs each): "
                   "the top-k, bottom-k and random-k triples removed, plus the unedited graph.")
        if lab_ui.active_job("accuracy", model=model.name, occupation=occupation):
            st.caption("This check is running (see the jobs below).")
        elif st.button("Run the check", type="primary", disabled=not ks or not kinds):
            job = tasks.influence_accuracy_task(model.path, occupation=occupation, ks=ks, kinds=kinds)
            lab_ui.submit("accuracy", f"{model.name}: influence check for {row['name']}", job, model=model.name,
                          occupation=occupation)
            st.rerun()

lab_ui.job_panel(("accuracy",))

with ui.errors_shown():
    runs = tasks.saved_accuracy(model.path, occupation)
    if runs is not None:
        summary = summarize_accuracy(runs)
        columns = st.columns(5)
        columns[0].metric("Pearson r", f"{summary.r:.3f}")
        columns[1].metric("p-value", f"{summary.p_value:.2g}")
        columns[2].metric("Random-removal noise", f"{summary.noise:.4f}", help="max |actual change| of random sets")
        columns[3].metric("Scale actual/predicted", f"{summary.scale:.3g}")
        columns[4].metric("Sign agreement", f"{summary.sign_agreement:.0%}")
        ui.show_chart(
            lab_ui.accuracy_scatter(runs, scale=summary.scale), runs,
            caption="Each point removes one set of triples and retrains masked from the same seed. Points on a line "
            "through 0 mean the influence ranks removals correctly; read r against the random sets' noise.",
            file_name=f"{model.name}-{occupation}-influence-check.csv".replace("/", "_"), key="accuracy",
        )
        current = analysis.model.influence_scale
        st.caption(f"Stored scale: {'none (uncalibrated)' if current is None else f'{current:.3g}'}.")
        if st.button(f"Store the scale {summary.scale:.3g} in the model", disabled=not summary.scale > 0):
            tasks.store_influence_scale(model.path, summary.scale)
            st.rerun()

st.header("Census (Du §4.1)")
data_dir = resolve_data_dir()
census = census_file(data_dir)
if model.dataset != "fb15k237":
    st.info(lab_ui.NO_PAIRING.format(dataset=model.dataset))
elif not census.is_file():
    st.info(lab_ui.NO_CENSUS.format(path=census, data_dir=data_dir))
else:
    with ui.errors_shown():
        year = st.selectbox("Census year", census_years(census), key="val_year")
        correlations, joined = census_validation(measures, census_path=census, year=year)
        if joined.empty:
            st.warning(CENSUS_NOT_PAIRED.format(model=model.name, dataset=model.dataset))
        elif correlations["n"].max() < 3:
            st.warning(lab_ui.CENSUS_TOO_FEW.format(n=int(correlations["n"].max()), year=year))
        else:
            st.dataframe(correlations, hide_index=True)
            st.caption("Pearson r and p of each measure against log(p/(1−p)), p = census share of men, across "
                       f"the {len(joined)} paired occupations. Du et al. (FB5M, 2018 census): B_gr r = 0.668.")
            measure = st.selectbox("Measure", CENSUS_MEASURES, key="val_measure")
            ui.show_chart(
                lab_ui.census_scatter(joined, measure=measure),
                joined[["occupation", "name", "p_male", "log_prop", measure]],
                caption="One point per paired occupation: a measure that tracks the census rises to the right.",
                file_name=f"{model.name}-census-{year}.csv", key="census",
            )
