"""The Overview's own UI: one report of several occupations. The page (``app_pages/overview.py``) calls these."""

from __future__ import annotations

from functools import partial

import pandas as pd
import streamlit as st

from kgbias_app import cache, links, texts
from kgbias_app.cache import ModelRef
from kgbias_app.widgets import (
    csv_name,
    occupation_titles,
)


def several_report_download(model: ModelRef, ranked: pd.DataFrame, measures: pd.DataFrame) -> None:
    """Pick occupations (by default the 3 most male- and 3 most female-leaning ranked ones) and download one HTML
    report of them: a summary table first, then a section each."""
    titles = occupation_titles(measures)
    default = list(dict.fromkeys([*ranked["occupation"].head(3), *ranked["occupation"].tail(3)]))
    chosen = links.multiselect(texts.SEVERAL_REPORT_PICK, list(titles), default=default, key="report_occupations",
                               what="occupation", format_func=titles.__getitem__)
    st.download_button(texts.SEVERAL_REPORT_BUTTON.format(n=len(chosen)), partial(cache.occupations_report, model,
                                                                                   tuple(chosen)),
                       file_name=csv_name(model.name, f"{len(chosen)}-occupations", "report", suffix=".html"),
                       mime="text/html", key="several_report", disabled=not chosen, help=texts.REPORT_HELP)
