"""Presenter mode, for a talk: larger type and fewer paragraphs (the explanatory captions of the main area are
hidden: the speaker says them), toggled in the sidebar, kept in the URL (``?presenter=1``) or on for every
session with ``KGBIAS_PRESENTER=1``. The toolbar's Deploy button and usage statistics are off in every mode
(``.streamlit/config.toml``: ``client.toolbarMode = "viewer"``, ``browser.gatherUsageStats = false``)."""

from __future__ import annotations

import os

import streamlit as st

from kgbias_app import links

PRESENTER_ENV = "KGBIAS_PRESENTER"
#: A fixed style sheet (no user text in it): larger type, captions of the main area hidden, no toolbar.
CSS = """<style>
[data-testid="stMain"] { font-size: 1.3rem; }
[data-testid="stMain"] p, [data-testid="stMain"] li { font-size: 1.3rem; }
[data-testid="stMain"] h1 { font-size: 3rem; }
[data-testid="stMain"] [data-testid="stMetricValue"] { font-size: 2.6rem; }
[data-testid="stMain"] [data-testid="stCaptionContainer"] { display: none; }
[data-testid="stToolbar"], [data-testid="stDeployButton"] { display: none; }
</style>"""


def default_on() -> bool:
    """On for every session when ``$KGBIAS_PRESENTER`` is 1."""
    return os.environ.get(PRESENTER_ENV, "").strip().lower() in ("1", "true", "yes")


def presenter_toggle() -> bool:
    """The sidebar's toggle (in the URL as ``presenter``); applies the style sheet when on."""
    if default_on() and "presenter" not in st.session_state:
        st.session_state["presenter"] = True  # not value=: a URL's ?presenter=0 seeds the session state
    on = links.toggle("Presenter mode", key="presenter", what="setting",
                      help="Larger type and fewer paragraphs, for a talk (?presenter=1 in the URL)")
    if on:
        st.markdown(CSS, unsafe_allow_html=True)  # a constant: nothing from the user or the data
    return on
