"""The Validation page's own UI: the removal sizes, the census table, the calibration. The page
(``app_pages/validation.py``) calls these."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from kgbias_app import cache, jobs_ui, texts
from kgbias_app.cache import ModelRef
from kgbias_app.escape import md
from kgbias_app.widgets import (
    csv_name,
    download,
    table,
)
from kgbias_core import tasks
from kgbias_core.analysis import ModelAnalysis
from kgbias_core.influence.calibration import leave_one_out
from kgbias_core.influence.retraining_check import default_ks
from kgbias_core.jobs import Priority

# Texts of this page alone (shared sentences stay in kgbias_app/texts.py).
KS_HELP = "{n:,} training triples have a non-zero influence on {name}."
CALIBRATION_TRANSE_ONLY = "Influence, and so its calibration, is defined for TransE models; this one is {kind}."
NOT_CALIBRATED_YET = (
    "This model's old estimator, Du's closed form, is not calibrated: its Σ δ_z gives the direction and the "
    "ranking of edits, not their size. The predicted changes the lab, the basket and the report show are the "
    "Newton step, which needs no calibration (issue 25). Calibrating (optional) fits the closed form's scale "
    "actual/predicted on 6 occupations spread over B_gr and group size (a masked retrain without the top-k and "
    "one without the bottom-k triples of each) and keeps the range of the per-occupation scales; a calibrated "
    "model then shows the old figure beside the Newton step, labelled."
)
SINGLE_SCALE = (
    "This model stores a single scale ({scale:.3g}) without a spread, so its predictions come without a "
    "range. Recalibrate on several occupations to get one."
)
LEAVE_ONE_OUT = (
    "Leave-one-occupation-out: fitted without each occupation in turn, the range held {inside} of its {n} "
    "retrained changes ({share:.0%})."
)
CALIBRATION_COLUMNS = {
    "name": "occupation", "kind": "removed set", "k": "k", "predicted": "Σ δ_z (raw)",
    "actual": "retrained change", "low": "interval low (others)", "high": "interval high (others)",
    "inside": "inside", "scale": "scale of this occupation", "occupation": "id",
}
CALIBRATION_RUNNING = "The calibration is running (see the jobs below)."
RECALIBRATE_BUTTON = "Recalibrate (13 masked retrains over 6 occupations)"


# --- validation ---------------------------------------------------------------------------------
def removal_ks(analysis: ModelAnalysis, *, occupation: str, name: str) -> list[int]:
    """Removal sizes k for the influence check, typed comma-separated (anything else is ignored); by
    default a small, a medium and a large share of the triples that move the occupation's B_gr at all."""
    n_moving = int((analysis.influence(occupation) != 0).sum())
    text = st.text_input("k values (comma-separated)", ", ".join(map(str, default_ks(n_moving))),
                         key=f"val_ks:{occupation}", help=KS_HELP.format(n=n_moving, name=name))
    return sorted({int(v) for v in text.replace(",", " ").split() if v.isdigit() and int(v) > 0})


def census_table(correlations: pd.DataFrame) -> None:
    """Pearson r and p of each measure against the census, measures by their display names."""
    named = correlations.assign(measure=correlations["measure"].map(texts.measure_name))
    table(named, ["measure", "r", "p_value", "n"], names={"p_value": "p", "n": "paired occupations"})


# --- validation: calibration --------------------------------------------------------------------
def calibration_section(model: ModelRef) -> None:
    """The stored calibration (scale, range, occupations), its leave-one-out check, and (re)calibrate."""
    stored = cache.analysis(model).model
    if stored.config.model != "transe":
        st.info(CALIBRATION_TRANSE_ONLY.format(kind=stored.config.model))
        return
    calibration = stored.calibration
    if calibration is None:
        st.info(NOT_CALIBRATED_YET if stored.influence_scale is None
                else SINGLE_SCALE.format(scale=stored.influence_scale))
    else:
        columns = st.columns(3)
        columns[0].metric("Calibrated scale", f"{calibration.scale:.3g}")
        columns[1].metric("Range over occupations", f"{calibration.low:.3g} – {calibration.high:.3g}")
        columns[2].metric("Occupations", len(calibration.occupations))
        runs = tasks.saved_calibration_runs(model.path)
        if runs is not None:
            held = leave_one_out(runs)
            st.caption(LEAVE_ONE_OUT.format(inside=int(held["inside"].sum()), n=len(held),
                                                  share=held["inside"].mean()))
            table = held.assign(scale=held["occupation"].map(
                dict(zip(calibration.occupations, calibration.per_occupation, strict=True))))
            shown = table[["name", "kind", "k", "predicted", "actual", "low", "high", "inside", "scale",
                           "occupation"]].rename(columns=CALIBRATION_COLUMNS)
            st.dataframe(shown, hide_index=True)
            download(table, csv_name(model.name, "calibration"), key="calibration:csv",
                     label="Download the calibration runs (CSV)")
    why = stored.retrain_refusal()  # an import: its 13 masked retrains would fail, so they are not offered
    if why is not None:
        st.caption(texts.NO_RETRAIN_HERE.format(why=md(why)))
        return
    task = tasks.calibration_task(model.path)
    if jobs_ui.is_running(task):
        st.caption(CALIBRATION_RUNNING)
    elif st.button(texts.with_estimate(texts.CALIBRATE_BUTTON if calibration is None else RECALIBRATE_BUTTON,
                                       seconds := tasks.calibration_seconds(model.path)), key="calibrate"):
        jobs_ui.submit(f"{model.name}: calibration", task, group="validation", priority=Priority.BACKGROUND,
                       estimate=seconds)
        st.rerun()
