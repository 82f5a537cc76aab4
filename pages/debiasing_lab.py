"""Debiasing lab (Du §4.3): edit one occupation's training triples, predict, retrain, compare with the base."""

import streamlit as st

from kgbias_app import cache, lab_ui, sidebar, ui
from kgbias_core import tasks
from kgbias_core.embeddings.store import default_store
from kgbias_core.evaluation.link_prediction import load_link_prediction
from kgbias_core.whatif.runs import bias_change

st.title("Debiasing lab")
model = sidebar.render()
if model is None:
    st.stop()
store = default_store()
run_point = None  # the selected run on the curve, when it removed triples of this occupation
JOB_KINDS = ("whatif", "noise", "curve", "link")

with ui.errors_shown():
    analysis = cache.analysis(model.path, model.version)
    measures = cache.measures(model.path, model.version)
    occupation, row, _ = ui.occupation_section(measures)
    noise = tasks.saved_noise_band(model.path)

st.subheader("Edit and predicted change")
strategy = st.radio("Edit", list(lab_ui.STRATEGIES), format_func=lab_ui.STRATEGIES.__getitem__, key="lab_strategy")
left, right = st.columns(2)
k, c, cap = 0, 0.5, 10_000
if strategy == "add":
    c = left.slider("c: dummies per missing person, c·(|M| − |F|)", 0.0, 2.0, 0.5, 0.1, key="lab_c")
    cap = int(right.number_input("At most this many dummies", 1, 1_000_000, 10_000, key="lab_cap"))
elif strategy != "basket":
    k = int(left.number_input("k: triples to remove", min_value=1, value=20, key="lab_k"))
mode = st.radio("Retraining", list(lab_ui.MODES), format_func=lab_ui.MODES.__getitem__, key="lab_mode")

with ui.errors_shown():
    edit = lab_ui.build_edit(analysis, model_name=model.name, occupation=occupation, strategy=strategy, k=k, c=c,
                             cap=cap)
    if edit is not None:
        before = row["group_bias"]
        if edit.kind == "add":
            st.info(lab_ui.ADD_NOT_PREDICTED)
            st.caption(f"Edit: {edit.strategy}, {len(edit.added_triples)} new triples.")
        else:
            change = cache.predicted_removal(model.path, model.version, occupation, edit.removed)
            columns = st.columns(3)
            columns[0].metric("B_gr now", ui.fmt(before), help=ui.SIGN)
            columns[1].metric(ui.removal_label(analysis.model.influence_scale), ui.fmt(change),
                              help=f"Sum of δ_z B_gr over the {len(edit.removed)} removed triples (METHODS §4).")
            columns[2].metric("Predicted B_gr after", ui.fmt(before + change) if ui.is_defined(before) else "undefined")
            if analysis.model.influence_scale is None:
                st.caption("Uncalibrated — ranking only: trust the sign, not the size (calibrate on the Validation "
                           "page).")
        name = tasks.whatif_name(model.name, edit, mode=mode, occupation_name=row["name"])
        if (store / name / "config.json").is_file():
            st.info(f"This what-if is already in the store as `{name}`: compare it below.")
        elif lab_ui.active_job("whatif", run=name):
            st.caption(f"`{name}` is being retrained (see the jobs below).")
        elif st.button(f"Retrain ({lab_ui.MODES[mode]})", type="primary"):
            lab_ui.submit("whatif", name, tasks.whatif_task(
                base=model.path, edit=edit, mode=mode, out=store / name, evaluate=True, overwrite=True),
                model=model.name, run=name)
            st.session_state["lab_last_run"] = name

lab_ui.job_panel(JOB_KINDS)

st.subheader("Noise band")
spread = lab_ui.noise_spread(noise, occupation)
if noise is None:
    st.info(lab_ui.NO_NOISE_BAND)
    if not lab_ui.active_job("noise", model=model.name) and st.button("Compute the noise band (3 retrains)"):
        lab_ui.submit("noise", f"{model.name}: noise band", tasks.noise_band_task(model.path), model=model.name)
        st.rerun()
else:
    st.caption(f"B_gr of {row['name']} across retrains of the unedited graph under seeds "
               f"{', '.join(map(str, tasks.NOISE_SEEDS))}: spread {ui.fmt(spread)} (max − min).")

st.subheader("Runs of this model")
with ui.errors_shown():
    runs = lab_ui.runs_of(store, model.name)
    if not runs:
        st.info("No what-if of this model yet: choose an edit above and retrain.")
    else:
        names = list(runs)
        last = st.session_state.get("lab_last_run")
        run_name = st.selectbox("Run", names, index=names.index(last) if last in names else len(names) - 1)
        edit_info = runs[run_name]["edit"]
        st.caption(f"Edit: {edit_info['strategy']} on {edit_info['occupation']}, retrained {edit_info['mode']}.")
        run_path = store / run_name
        frame = bias_change(analysis, cache.analysis(str(run_path), cache.model_version(run_path)))
        target = frame.set_index("occupation").loc[edit_info["occupation"]]
        columns = st.columns(3)
        columns[0].metric(f"B_gr of {target['name']} before", ui.fmt(target["group_bias_before"]), help=ui.SIGN)
        columns[1].metric("after", ui.fmt(target["group_bias_after"]))
        columns[2].metric("change", ui.fmt(target["change"]))
        st.caption(lab_ui.noise_sentence(target["change"], lab_ui.noise_spread(noise, edit_info["occupation"])))
        baseline = lab_ui.random_baseline_sentence(tasks.saved_curve(model.path, edit_info["occupation"]),
                                                   k=edit_info["n_removed"])
        if baseline:
            st.caption(baseline)
        if edit_info["occupation"] == occupation and edit_info["kind"] == "remove":
            run_point = (edit_info["n_removed"], float(target["group_bias_after"]))
        ui.show_chart(
            lab_ui.bias_change_bars(frame, occupation=edit_info["occupation"], noise=noise), frame,
            caption="Change of B_gr of every occupation (the edited one in orange); error bars: half the noise "
            "band's spread. Bars beyond their error bars moved by more than retraining noise.",
            file_name=f"{run_name}-bias-change.csv", key="bias_change",
        )
        base_links, run_links = load_link_prediction(model.path), load_link_prediction(run_path)
        if base_links is not None and run_links is not None:
            st.dataframe(lab_ui.link_table(base_links, run_links), hide_index=True)
            st.caption("Filtered tail prediction on the test split: all queries and occupation queries only.")
        elif not lab_ui.active_job("link", model=run_name) and st.button("Compute link prediction"):
            lab_ui.submit("link", f"{run_name}: link prediction",
                          tasks.link_prediction_task([run_path, model.path]), model=run_name)
            st.rerun()

st.subheader("B_gr against k (Du Fig 4d-f)")
with ui.errors_shown():
    ks = st.multiselect("k values", [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000], default=[5, 20, 50],
                        key="lab_curve_ks")
    if not lab_ui.active_job("curve", model=model.name, occupation=occupation) and st.button(
        f"Compute the curve ({2 * len(ks)} retrains from scratch)", disabled=not ks
    ):
        job = tasks.removal_curve_task(model.path, occupation=occupation, ks=sorted(ks))
        lab_ui.submit("curve", f"{model.name}: curve for {row['name']}", job, model=model.name, occupation=occupation)
        st.rerun()
    curve = tasks.saved_curve(model.path, occupation)
    if curve is not None:
        ui.show_chart(
            lab_ui.removal_curve(curve, spread=spread, run=run_point), curve,
            caption="B_gr after masked retraining without k triples: IF-REMOVE (by influence, towards 0) against "
            "Random-REMOVE (the baseline). The grey band is the noise of retraining under other seeds.",
            file_name=f"{model.name}-{occupation}-curve.csv".replace("/", "_"), key="removal_curve",
        )
