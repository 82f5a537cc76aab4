"""Reruns of the whole app that no click asked for (a job ended, a model was saved), made without losing a click.

A rerun the script asks for (``st.rerun()``) resets every button of the run it stops. The panels that poll jobs
are drawn above the page's own buttons (the queue in the sidebar) or among them, so a rerun asked for in the middle
of the run that carries a person's click threw the click away: in the CI run of 2026-12-07 the L2 audit's "Predict
the stored audit again" was clicked in the run that first saw the noise band's job end, and never ran. So such a
rerun is made at once only from a fragment's own run (no click of the page is in it), and otherwise at the end of
the run, by the router (``dashboard.py``), once every button of the page has been read and before the URL is written
(a run that reruns leaves the URL to the rerun, as a stopped run did: a link's refused value is named again).
"""

from __future__ import annotations

import streamlit as st
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

#: Session state: this full run saw something that the whole app must be redrawn for.
ASKED_KEY = "rerun_asked"


def fragment_run() -> bool:
    """Is this a fragment's own run (``@st.fragment`` rerunning alone), not a run of the whole app?"""
    ctx = get_script_run_ctx()
    return bool(ctx is not None and ctx.fragment_ids_this_run)


def rerun_app() -> None:
    """Rerun the whole app: at once from a fragment's own run, else once this run has drawn the page
    (:func:`rerun_if_asked`)."""
    if fragment_run():
        st.rerun()
    st.session_state[ASKED_KEY] = True


def rerun_if_asked() -> None:
    """At the end of a run of the whole app: the rerun that a panel asked for during it, if one did."""
    if st.session_state.pop(ASKED_KEY, False):
        st.rerun()
