"""The Overview's own UI: the model's link prediction in one line, one report of several occupations. The page
(``app_pages/overview.py``) calls these."""

from __future__ import annotations

from functools import partial

import pandas as pd
import streamlit as st

from kgbias_app import cache, jobs_ui, links, texts
from kgbias_app.cache import ModelRef
from kgbias_app.escape import md_format
from kgbias_app.widgets import (
    csv_name,
    download_button,
    occupation_titles,
)
from kgbias_core import tasks
from kgbias_core.evaluation.link_prediction import headline, load_link_prediction

# Texts of this page alone (shared sentences stay in kgbias_app/texts.py).
SEVERAL_REPORT_PICK = "Occupations for one report"
SEVERAL_REPORT_BUTTON = "Download a report of {n} occupation(s) (HTML)"
LINK_PREDICTION_LINE = (
    "Link prediction of this model (test split, filtered, realistic ranks, heads and tails pooled): "
    "**MRR {mrr:.3f}** · Hits@1 {hits@1:.3f} · Hits@3 {hits@3:.3f} · Hits@10 {hits@10:.3f}. A bias read from a "
    "model that predicts facts poorly may be the training's, not the graph's (each side on Model comparison)."
)
LINK_PREDICTION_NOT_YET = "Link prediction of this model is not computed yet (filtered MRR and Hits@k, both sides)."
LINK_PREDICTION_COMPUTE = "Compute link prediction"
SEED_BAND_OVERVIEW = (
    "This model is one of {n} seeds of family **{family}** ({members}). The table's *seed min / max / std* columns "
    "give each measure's spread over the seeds, beside its bootstrap interval over persons: the training's own "
    "randomness, which the interval does not see."
)
#: The seed-band columns the ranked table shows for a member of a seed family (issue 24).
SEED_COLUMNS = ("group_bias_seed_min", "group_bias_seed_max", "group_bias_seed_std")


def several_report_download(model: ModelRef, ranked: pd.DataFrame, measures: pd.DataFrame) -> None:
    """Pick occupations (by default the 3 most male- and 3 most female-leaning ranked ones) and download one HTML
    report of them: a summary table first, then a section each."""
    titles = occupation_titles(measures)
    default = list(dict.fromkeys([*ranked["occupation"].head(3), *ranked["occupation"].tail(3)]))
    chosen = links.multiselect(SEVERAL_REPORT_PICK, list(titles), default=default, key="report_occupations",
                               what="occupation", format_func=titles.__getitem__)
    download_button(SEVERAL_REPORT_BUTTON.format(n=len(chosen)), partial(cache.occupations_report, model,
                                                                         tuple(chosen)),
                    file_name=csv_name(model.name, f"{len(chosen)}-occupations", "report", suffix=".html"),
                    mime="text/html", key="several_report", disabled=not chosen, help=texts.REPORT_HELP)


def link_prediction_line(model: ModelRef) -> None:
    """The model's link prediction in one line (MRR, Hits@1/3/10, both sides pooled), or a button computing it
    as a job (a large graph takes minutes: never on page load)."""
    line = headline(load_link_prediction(model.path))
    if line is not None:
        st.caption(" ".join(filter(None, (LINK_PREDICTION_LINE.format(**line), texts.link_baseline_sentence(line)))))
        return
    job = tasks.link_prediction_task([model.path])
    st.caption(LINK_PREDICTION_NOT_YET)
    if jobs_ui.is_running(job):
        jobs_ui.progress_panel([job], key="link_prediction_line")
    elif st.button(LINK_PREDICTION_COMPUTE, key="link_prediction_line"):
        jobs_ui.submit(f"Link prediction of {model.name}", job)
        st.rerun()


def family_note(model: ModelRef, measures: pd.DataFrame) -> list[str]:
    """For a member of a seed family: a note naming the family, and the seed-band columns the ranked table
    adds (none for a model of no family)."""
    columns = [c for c in SEED_COLUMNS if c in measures.columns]
    if columns:
        members = ", ".join(cache.config(model)["family"]["members"])
        st.info(md_format(SEED_BAND_OVERVIEW, n=int(measures["n_seeds"].max()), family=str(measures["family"].iloc[0]),
                          members=members))
    return columns
